"""Shared fixtures: a fresh database per test, closed afterwards."""

import pytest

import augur


@pytest.fixture
def path(tmp_path):
    """A database directory that does not exist yet."""
    return str(tmp_path / "db")


@pytest.fixture
def db(path):
    """An open database with default options."""
    handle = augur.open(path)
    yield handle
    handle.close()

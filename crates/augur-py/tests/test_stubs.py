"""The type stubs (augur.pyi, shipped with py.typed) agree with the compiled module."""

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def test_stubtest_finds_no_difference():
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "augur", "--allowlist", str(HERE / "stubtest_allowlist.txt")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_is_typed():
    import augur

    assert (pathlib.Path(augur.__file__).parent / "py.typed").exists()

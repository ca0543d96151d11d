"""db.stats() has the fields of `augur stats --json` (the same renderer builds both)."""

import json
import os
import pathlib
import subprocess

import augur

REPO = pathlib.Path(__file__).resolve().parents[3]


def _shape(value):
    """The field names of a JSON value, recursively (lists: the shape of their items)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        shapes = [_shape(v) for v in value]
        return shapes[0] if shapes else []
    return None


def test_stats_fields(db):
    for i in range(3000):
        db.put(b"%06d" % i, b"v" * 50)
    db.flush()
    db.get(b"000001")
    s = db.stats()
    for field in ("levels", "files", "table_bytes", "value_log", "counters", "learning",
                  "index_memory", "write_amplification", "last_seqno", "compaction_style"):
        assert field in s
    assert s["files"] >= 1
    assert s["counters"]["writes"] >= 3000
    assert s["compaction_style"] == "leveled"
    assert isinstance(s["write_amplification"], float)


def test_stats_match_the_cli(path):
    """Compared with the CLI binary the root `cargo test --workspace --release` builds."""
    cli = os.environ.get("AUGUR_CLI") or str(REPO / "target" / "release" / "augur")
    if not os.path.exists(cli):
        import pytest

        pytest.skip(f"no CLI binary at {cli} (build it with cargo build --release -p augur-cli)")
    with augur.open(path) as db:
        for i in range(3000):
            db.put(b"%06d" % i, b"v" * 50)
        db.flush()
        ours = db.stats()
    out = subprocess.run([cli, "--db", path, "stats", "--json"], capture_output=True, text=True, check=True)
    theirs = json.loads(out.stdout)
    assert _shape(ours) == _shape(theirs)
    assert ours["files"] == theirs["files"]
    assert ours["table_bytes"] == theirs["table_bytes"]

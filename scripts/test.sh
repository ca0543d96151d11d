#!/usr/bin/env bash
# The project's one test command (README, .ci/run): the Rust workspace's tests, then the
# Python package's.
#
#   0. the layering rules of issue 24 (docs/ARCHITECTURE.md): scripts/check_layers.py, after
#      its --self-test (engine imports point down, re-exports resolved to where an item is
#      defined, no module or file cycles, front ends independent), scripts/check_unsafe.py
#      (every `unsafe` has its row in docs/UNSAFE.md, no `#[allow(unsafe_code)]`), and from
#      `cargo tree` (no build): the default `augur` binary does not enable the engine's
#      `test-util`, and the Python package does not depend on the benchmark harness
#   1. redis-tools, redis-server and nutcracker from apt when missing (the server's client,
#      proxy and byte-for-byte differential tests against redis-server), then cargo test --workspace --release --features augur-cli/stress (`augur stress` and its
#      tests are behind the CLI's cargo feature `stress`; this build also leaves the
#      target/release/augur that step 5 runs as AUGUR_CLI)
#   1b. the API docs built with rustdoc's warnings as errors (a broken or private intra-doc
#      link fails the run)
#   1c. the fuzz targets type-checked (`cargo check --bins` in fuzz/, its own workspace, on
#      the stable toolchain: running them needs nightly and cargo-fuzz, scripts/fuzz.sh), so
#      an engine API change cannot leave them broken unnoticed
#   2. a virtual environment in target/py-venv (python3-venv from apt only when `venv`
#      is missing), maturin, pytest, mypy (its stubtest checks augur.pyi) and redis-py from
#      the package index into it; the server's redis-py test (tests/redis_py.rs, redis-py
#      with its defaults: RESP3 from version 8) run again with that interpreter
#   3. the `augur` module built in develop mode, release profile (crates/augur-py, its own
#      cargo workspace and target directory)
#   4. the wheel built and pip-installed into a second, fresh environment, and imported
#   5. pytest on crates/augur-py/tests
#
# Environment: PYTHON (default python3) picks the interpreter; AUGUR_PY_VENV the test
# environment's directory.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The layering rule of docs/ARCHITECTURE.md: engine modules import only downward, no
# module or file cycles, front ends independent of each other.
# Its self-test first: fixture trees with an upward import through a re-export, a file
# cycle behind a mod.rs, and a clean tree, so a check that stopped seeing fails here.
"${PYTHON:-python3}" scripts/check_layers.py --self-test
"${PYTHON:-python3}" scripts/check_layers.py
# Every `unsafe` is listed in docs/UNSAFE.md, and exceptions are `expect`, not `allow`.
"${PYTHON:-python3}" scripts/check_unsafe.py

# (Each tree is read whole before grep: `grep -q` stopping early would fail the pipe.)
cli_features=$(cargo tree -q -p augur-cli -e features -i augur)
if grep -q 'test-util' <<<"$cli_features"; then
  echo "augur-cli's default build enables augur/test-util (only --features stress may):" >&2
  echo "$cli_features" >&2
  exit 1
fi
py_deps=$(cd crates/augur-py && cargo tree -q -e normal,build)
if grep -q 'augur-bench' <<<"$py_deps"; then
  echo "crates/augur-py depends on augur-bench (it may use augur-frontend only):" >&2
  echo "$py_deps" >&2
  exit 1
fi

# The server's tests drive the real clients and proxy (redis-cli, redis-benchmark, twemproxy)
# and compare replies with a real redis-server:
# installed from the Debian packages when missing and apt is usable (the tests say "skipped"
# when they are still missing).
if ! command -v redis-cli >/dev/null 2>&1 || ! command -v nutcracker >/dev/null 2>&1 ||
  ! command -v redis-server >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing redis-tools, redis-server and nutcracker from the Debian packages" >&2
    (apt-get update -qq && apt-get install -y -qq redis-tools redis-server nutcracker >/dev/null) ||
      echo "warning: could not install redis-tools/redis-server/nutcracker; their tests will be skipped" >&2
  fi
fi

cargo test --workspace --release --features augur-cli/stress

# The API documentation: every intra-doc link resolves to a public item.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
# The fuzz targets still compile against the engine (stable toolchain; running needs nightly).
(cd fuzz && cargo check -q --bins)

PYTHON=${PYTHON:-python3}
VENV=${AUGUR_PY_VENV:-$ROOT/target/py-venv}
WHEEL_VENV=$ROOT/target/py-wheel-venv
WHEELS=$ROOT/target/py-wheels
CRATE=$ROOT/crates/augur-py

if ! command -v "$PYTHON" >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "python3 venv support missing: installing python3-venv from the Debian packages" >&2
  apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  PYTHON=python3
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9.4,<2" pytest mypy "redis>=5"

# redis-py with its defaults against augur-server (step 1 skips it when the system Python
# has no redis-py); the release build of step 1 is reused.
AUGUR_TEST_PYTHON=$VENV/bin/python cargo test --release -p augur-server --test redis_py

# maturin finds the environment through VIRTUAL_ENV.
VIRTUAL_ENV=$VENV "$VENV/bin/maturin" develop --release --quiet -m "$CRATE/Cargo.toml"

# The wheel itself, installed with pip into an environment that has nothing else.
rm -rf "$WHEELS" "$WHEEL_VENV"
"$VENV/bin/maturin" build --release --quiet -m "$CRATE/Cargo.toml" -o "$WHEELS" \
  --interpreter "$VENV/bin/python"
"$VENV/bin/python" -m venv "$WHEEL_VENV"
"$WHEEL_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-index "$WHEELS"/augur_kv-*.whl
"$WHEEL_VENV/bin/python" - "$ROOT/target/py-wheel-db" <<'EOF'
import shutil, sys
import augur
path = sys.argv[1]
shutil.rmtree(path, ignore_errors=True)
with augur.open(path) as db:
    db[b"wheel"] = b"ok"
    assert db[b"wheel"] == b"ok"
shutil.rmtree(path)
print("wheel: installed and imported in a fresh environment:", augur.__file__)
EOF

AUGUR_CLI=$ROOT/target/release/augur "$VENV/bin/python" -m pytest -q "$CRATE/tests"

#!/usr/bin/env bash
# The long damage sweep (docs/RELIABILITY.md, "Damage model"): every file of each type of a
# cleanly closed database, damaged at the fixed offsets of the CI sweep plus SAMPLES random
# bit flips and truncations per file (default 200), each opened and read back.
#
#   scripts/damage_sweep.sh [SAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLES=${1:-200}
AUGUR_DAMAGE_SWEEP=full AUGUR_DAMAGE_SAMPLES=$SAMPLES \
  cargo test --release -p augur --test corruption -- --test-threads=2

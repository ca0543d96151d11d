# Shared by the benchmark scripts (source it): record and run commands.

# quote ARGS...: the arguments as one shell line, quoting only those that need it.
quote() {
  local a out=()
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=,:+@%-]+$ ]]; then out+=("$a"); else out+=("$(printf '%q' "$a")"); fi
  done
  echo "${out[*]}"
}

# run LOG CMD...: appends CMD (exactly as run, from the repository root) to $CMDS and runs
# it with stdout and stderr in $OUT/logs/LOG.log; on failure prints the log's tail and stops.
run() {
  local log="$OUT/logs/$1.log"; shift
  quote "$@" >>"$CMDS"
  echo "== $(basename "$log" .log)" >&2
  if ! "$@" >"$log" 2>&1; then
    echo "failed: $*" >&2
    tail -20 "$log" >&2
    exit 1
  fi
}

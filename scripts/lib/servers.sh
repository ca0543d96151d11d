# Shared by the scripts that start server processes (source it from the repository root):
# checking for a tool and waiting for a port.

# need TOOL PACKAGE: exit with the apt-get line when TOOL is not installed.
need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "$1 is not installed: apt-get install -y $2" >&2
    exit 1
  }
}

# wait_port PORT: wait (up to 10 s) until something accepts connections on 127.0.0.1:PORT.
wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "nothing listens on port $1 after 10 s" >&2
  return 1
}

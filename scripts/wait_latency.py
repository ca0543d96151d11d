#!/usr/bin/env python3
"""WAIT latency against a primary with replicas: N times (default 300) SET a key, then
`WAIT 1 1000`; prints the median, p90 and maximum of each SET + WAIT pair and how many WAITs
counted at least one replica. Needs redis-py.

    scripts/ha.sh up && chrt -f 50 python3 scripts/wait_latency.py 7101 [N]
"""
import sys
import time

import redis


def main() -> None:
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    r = redis.Redis(port=port)
    times, acked = [], 0
    for i in range(n):
        t = time.perf_counter()
        r.set(f"user:{i}:profile", "v" * 100)
        acked += r.wait(1, 1000) >= 1
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(
        f"SET + WAIT 1 1000 on port {port}: median {times[n // 2]:.2f} ms, "
        f"p90 {times[n * 9 // 10]:.2f} ms, max {times[-1]:.2f} ms; "
        f"{acked}/{n} acknowledged by a replica"
    )


if __name__ == "__main__":
    main()

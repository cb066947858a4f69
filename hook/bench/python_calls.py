"""Cost of a Python call, traced and untraced, in one process (python_trace_bench.sh).

Calls `untraced` and `traced` (two identical one-line functions) N times each in a loop, best of
R rounds, and prints ns per loop iteration of each (with ONLY, `untraced` or `traced`: that
function alone, for instruction counts under callgrind). Under libxtimer.so with
XTIMER_PY_TRACE=__main__:traced it first starts the hook (xtimer_enabled) and waits for the
tracer to be installed; without the hook both functions are plain calls.
Usage: python_calls.py N R [ONLY]
"""

import ctypes
import gc
import sys
import time


def untraced(x):
    return x


def traced(x):
    return x


def loop(f, n):
    start = time.perf_counter_ns()
    for i in range(n):
        f(i)
    return time.perf_counter_ns() - start


def start_hook():
    enabled = getattr(ctypes.CDLL(None), "xtimer_enabled", None)
    if enabled is None or enabled() != 1:
        return "plain"
    deadline = time.monotonic() + 30
    while not any(getattr(cb, "__module__", None) == "xtimer_pytrace" for cb in gc.callbacks):
        if time.monotonic() > deadline:
            return "hook, tracer not installed"
        untraced(0)
    return "traced"


def main(argv):
    n, rounds = int(argv[1]), int(argv[2])
    only = argv[3] if len(argv) > 3 else None
    mode = start_hook()
    best = {"untraced": float("inf"), "traced": float("inf")}
    for _ in range(rounds):
        for name, f in (("untraced", untraced), ("traced", traced)):
            if only in (None, name):
                best[name] = min(best[name], loop(f, n) / n)
    print("%s untraced_ns %.2f traced_ns %.2f" % (mode, best["untraced"], best["traced"]))


if __name__ == "__main__":
    main(sys.argv)

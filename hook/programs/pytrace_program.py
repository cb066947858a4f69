"""A Python rank traced by libxtimer.so without code changes (docs/hook.md "Python tracing").

Run under the hook with XTIMER_PY_TRACE naming this module's functions (python_trace_program_test).
It starts the hook (the C API's xtimer_enabled), waits until the tracer is installed (its
gc.callbacks entry), then calls traced and untraced functions on the main thread, in a thread
started afterwards, through a subclass's override, through an exception, and a slow data loader,
and forces one collection of each generation. MODE adds a profiler of its own:
  none          no profiler;
  before        sys.setprofile before the hook starts (3.8-3.11: xtimer chains it);
  after         sys.setprofile after the tracer is installed (it replaces xtimer's on that thread);
  monitoring    3.12+: sys.monitoring with tool id 2 (PROFILER_ID) and global events;
  idle          as none (the test leaves XTIMER_PY_TRACE unset);
  count         only CALLS calls of compute on the main thread, then "loop_ns N" (their time) and
                "OK": traced calls alone, no CUDA call (the hook's own time, hook_own_ns).
Prints what the program saw: "minor V", whether threading has a profile hook and who holds
sys.monitoring's tool 4, "calls N", "profiler call=A return=B", "loader_ns X,Y,..." (the time
each __next__ measured of itself), then "OK".
Usage: pytrace_program.py MODE CALLS [GO_FILE: exit once it exists]
"""

import ctypes
import gc
import os
import sys
import threading
import time


def compute(x):
    return x * 2


def untraced(x):
    return x + 1


def fails():
    raise ValueError("expected")


class Model:
    def step(self):
        return compute(1)


class Sub(Model):
    def step(self):
        return super().step() + 1


class SlowLoader:
    """A data loader whose batches take work: each __next__ measures itself."""

    def __init__(self):
        self.inner_ns = []

    def __iter__(self):
        return self

    def __next__(self):
        start = time.time_ns()
        total = sum(i * i for i in range(20000))
        self.inner_ns.append(time.time_ns() - start)
        return total


class Counter:
    """A profiler of the program's own: counts compute's calls and returns."""

    def __init__(self):
        self.calls = self.returns = 0

    def __call__(self, frame, event, arg):
        if frame.f_code is compute.__code__:
            if event == "call":
                self.calls += 1
            elif event == "return":
                self.returns += 1


def tracer_installed():
    return any(getattr(cb, "__module__", None) == "xtimer_pytrace" for cb in gc.callbacks)


def monitor(counter):
    mon = sys.monitoring
    mon.use_tool_id(mon.PROFILER_ID, "pytrace_program")

    def start(code, offset):
        if code is compute.__code__:
            counter.calls += 1

    def ret(code, offset, value):
        if code is compute.__code__:
            counter.returns += 1

    mon.register_callback(mon.PROFILER_ID, mon.events.PY_START, start)
    mon.register_callback(mon.PROFILER_ID, mon.events.PY_RETURN, ret)
    mon.set_events(mon.PROFILER_ID, mon.events.PY_START | mon.events.PY_RETURN)


def count_calls(calls):
    start = time.monotonic_ns()
    for i in range(calls):
        compute(i)
    print("loop_ns %d" % (time.monotonic_ns() - start))
    print("OK", flush=True)
    return 0


def main(argv):
    mode, calls = argv[1], int(argv[2])  # argv[3], if given: a file to wait for at the end
    counter = Counter()
    if mode == "before":
        sys.setprofile(counter)
    enabled = getattr(ctypes.CDLL(None), "xtimer_enabled", None)
    if enabled is None or enabled() != 1:
        print("pytrace_program: libxtimer.so is not preloaded or is off", file=sys.stderr)
        return 2
    deadline = time.monotonic() + 60
    while not tracer_installed():  # the pending call runs between two bytecodes
        if time.monotonic() > deadline:
            print("pytrace_program: the tracer was not installed", file=sys.stderr)
            return 3
        untraced(0)
    if mode == "count":
        return count_calls(calls)
    if mode == "after":
        sys.setprofile(counter)
    elif mode == "monitoring":
        monitor(counter)
    loader = SlowLoader()
    for i in range(calls):
        compute(i)
        untraced(i)
        Sub().step()
        next(loader)
        try:
            fails()
        except ValueError:
            pass
    worker = threading.Thread(target=lambda: [compute(i) for i in range(calls)])
    worker.start()
    worker.join()
    sys.setprofile(None)
    for generation in (0, 1, 2):
        gc.collect(generation)
    print("minor %d" % sys.version_info[1])
    print("profile_hook %s" % ("set" if getattr(threading, "_profile_hook", None) else "none"))
    print("tool4 %s" % (sys.monitoring.get_tool(4) if hasattr(sys, "monitoring") else None))
    print("calls %d" % calls)
    print("profiler call=%d return=%d" % (counter.calls, counter.returns))
    print("loader_ns " + ",".join(str(n) for n in loader.inner_ns))
    print("OK", flush=True)
    while len(argv) > 3 and not os.path.exists(argv[3]):  # the e2e test scrapes the daemon
        time.sleep(0.01)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""A Python rank that dies of an uncaught ValueError in load_batch, or of a SIGSEGV in a ctypes
call, for //test/e2e:pyexc_e2e_test (docs/crash.md). Run with libxtimer.so preloaded (no CUDA
needed: the C API's xtimer_enabled starts the hook, which then installs its audit hook).
  pyexc_program.py MODE GO_FILE
MODE: "none" (no excepthook of its own), "before" (sets sys.excepthook before the hook starts)
or "after" (after it started). Its excepthook prints "application excepthook called: TYPE" and
chains to the one it replaced, which prints the traceback. MODE "segv": crash_in_native, called
by native_step, called by main, passes NULL to libc's strlen through ctypes.CDLL. Prints "ready"
once the hook is on, waits until GO_FILE exists (the test creates it once the daemon lists the
process), then raises or crashes.
Standard library only; CPython 3.8 or later.
"""

import ctypes
import os
import sys
import time


def application_excepthook(etype, value, tb):
    print("application excepthook called: %s" % etype.__name__, flush=True)
    previous(etype, value, tb)


def load_batch(index):
    raise ValueError("bad batch %d: \"quoted\"\nsecond line" % index)  # the crashing line


def train_step():
    load_batch(7)


def crash_in_native():
    ctypes.CDLL(None).strlen(ctypes.c_void_p(0))  # the segv line


def native_step():
    crash_in_native()  # the native step line


def main(argv):
    global previous
    if len(argv) != 3 or argv[1] not in ("none", "before", "after", "segv"):
        print("usage: pyexc_program.py none|before|after|segv GO_FILE", file=sys.stderr)
        return 2
    previous = sys.excepthook
    if argv[1] == "before":
        sys.excepthook = application_excepthook
    enabled = getattr(ctypes.CDLL(None), "xtimer_enabled", None)
    if enabled is None or enabled() != 1:
        print("pyexc_program: libxtimer.so is not preloaded or is off", file=sys.stderr)
        return 2
    if argv[1] == "after":
        sys.excepthook = application_excepthook
    print("ready", flush=True)
    while not os.path.exists(argv[2]):
        time.sleep(0.01)
    if argv[1] == "segv":
        native_step()  # the main line
    train_step()
    return 0


previous = None

if __name__ == "__main__":
    sys.exit(main(sys.argv))  # the module line

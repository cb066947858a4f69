"""Python threads for //hook:stack_capture_test, run with libxtimer.so preloaded: thread "stuck"
spins in stuck_in_python; the main thread blocks in read(0) called through ctypes.PyDLL, which
keeps holding the GIL while it blocks, from hold_gil_in_native, called by read_input, called by
main, called from the module (on 3.11+ one C-level evaluation runs all four frames). Prints
"ready" first; ends when stdin closes."""

import ctypes
import sys
import threading


def stuck_in_python():
    x = 0
    while True:
        x += 1  # marker: stuck line


def hold_gil_in_native(libc):
    buf = ctypes.create_string_buffer(1)
    libc.read(0, buf, 1)  # marker: gil line


def read_input(libc):
    hold_gil_in_native(libc)  # marker: read_input line


def main():
    if ctypes.CDLL(None).xtimer_enabled() != 1:
        print("stack_py: libxtimer.so is not preloaded or is off", file=sys.stderr)
        return 2
    threading.Thread(target=stuck_in_python, name="stuck", daemon=True).start()
    libc = ctypes.PyDLL(None)  # PyDLL: calls keep the GIL
    print("ready", flush=True)
    read_input(libc)  # marker: main line
    return 0


if __name__ == "__main__":
    sys.exit(main())  # marker: module line

"""Python threads for //hook:stack_capture_test under embed_python (libpython loaded RTLD_LOCAL,
so no C extension such as ctypes can load): thread "stuck" spins in stuck_in_python; the main
thread waits on stdin. Prints "ready"; ends when stdin closes."""

import sys
import threading


def stuck_in_python():
    x = 0
    while True:
        x += 1  # marker: stuck line


def wait_for_stdin():
    sys.stdin.readline()  # marker: stdin line


threading.Thread(target=stuck_in_python, name="stuck", daemon=True).start()
print("ready", flush=True)
wait_for_stdin()

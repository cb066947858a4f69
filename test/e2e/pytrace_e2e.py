#!/usr/bin/env python3
"""Python tracing to metrics (docs/hook.md "Python tracing", docs/metrics.md "Python").

hook/programs/pytrace_program.py runs under xtimer-launch (its own daemon) on the simulator, on
Debian's python3 (3.11) and pyenv's 3.8, 3.12 and 3.13 (a version missing fails the test), with
XTIMER_PY_TRACE naming its functions (a slow data loader's __next__ as @data, Model.step as
@step). Before it exits, the daemon's /metrics show for its rank: as many data-loader waits as
batches and at least the time the loader measured of itself, the traced functions' calls (the
main thread's and a later thread's) with their histogram, and a collection of each generation.

Usage: pytrace_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYTRACE_PROGRAM
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, every_python, fail, free_ports, log,  # noqa: E402
                     parse, scrape, select, stop_daemon, wait_for)

JOB = "pytrace"
CALLS = 6
SPECS = ("__main__:compute,__main__:Model.step@step,__main__:SlowLoader.__next__@data,"
         "__main__:fails")


def value(samples, name, **labels):
    got = select(samples, name, job=JOB, rank="0", **labels)
    return got[0][1] if len(got) == 1 else None


def run(p, python, program, ports, env):
    label = os.path.basename(python)
    go = os.path.join(p.tmp, "go-" + label)
    job = Background("pytrace-" + label,
                     p.launch_argv(p.run_dir("node"), ports[0], ports[1], JOB) +
                     [p.gpusim_run, python, program, "none", str(CALLS), go], env, p.tmp)
    try:
        job.wait_for_line(r"(?m)^OK$", 60)
        loader_ns = [int(n) for n in
                     job.output().split("loader_ns ")[1].splitlines()[0].split(",")]

        def complete():  # every span of the run ingested
            samples = parse(scrape(ports[0]))
            done = (value(samples, "xtimer_python_data_waits_total") == CALLS and
                    value(samples, "xtimer_python_gc_pauses_total", generation="2") and
                    value(samples, "xtimer_python_function_calls_total",
                          function="__main__:compute", kind="call") == 3 * CALLS)
            return samples if done else None
        samples = wait_for("%s: the run's Python metrics" % label, complete, 30)
        open(go, "w").close()
        job.wait(60)
    finally:
        job.kill()
    check(label, samples, loader_ns)


def check(label, samples, loader_ns):
    waited = value(samples, "xtimer_python_data_wait_seconds_total")
    if waited is None or waited < sum(loader_ns) * 1e-9:
        fail("%s: data-loader wait %s s, less than the loader measured (%s ns)" %
             (label, waited, loader_ns))
    step = {"function": "__main__:Model.step", "kind": "step"}
    if value(samples, "xtimer_python_function_duration_seconds_count", **step) != CALLS:
        fail("%s: want %d Model.step calls in the histogram: %s" % (label, CALLS, select(
            samples, "xtimer_python_function_duration_seconds_count", job=JOB)))
    inf = value(samples, "xtimer_python_function_duration_seconds_bucket", le="+Inf", **step)
    if inf != CALLS:
        fail("%s: the +Inf bucket of Model.step holds %s" % (label, inf))
    for generation in ("0", "1", "2"):
        if not value(samples, "xtimer_python_gc_pauses_total", generation=generation):
            fail("%s: no collection of generation %s counted" % (label, generation))
    log("%s: %d batches waited %.3f s (the loader measured %.3f s), gc pauses %s" % (
        label, CALLS, waited, sum(loader_ns) * 1e-9,
        [value(samples, "xtimer_python_gc_pauses_total", generation=g) for g in "012"]))


def main(argv):
    if len(argv) != 8:
        fail(__doc__)
    program = os.path.abspath(argv[7])
    p = Paths(argv[:7], __doc__)
    ports = free_ports(2)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    # Under ASan: CPython leaves its objects allocated at exit (LeakSanitizer would report them).
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    env.update({"XTIMER_CONTROL_PORT": str(ports[1]), "XTIMER_PY_TRACE": SPECS, "RANK": "0",
                "WORLD_SIZE": "1"})
    try:
        for python in every_python(("3.8", "3.12", "3.13")):
            run(p, python, program, ports, env)
    finally:
        stop_daemon(p.run_dir("node"))
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Step time from each source (docs/metrics.md xtimer_step_seconds) on a PyTorch-shaped job.

demo/python/pysteps.py runs 2 ranks on the simulator under xtimer-launch with its own xtimerd,
on Debian's python3: each step a data batch (Loader.__next__, host time), two kernels, one
all-reduce per parameter (PARAMS, of 4 sizes), Optimizer.step (the step's one synchronize, then a
Python update). Three runs, one per source:
  nvtx         each step an NVTX push/pop range (libpydemo_nvtx.so through NVTX's injection),
               XTIMER_STEP_RANGE naming it; XTIMER_PY_TRACE also names Optimizer.step (the NVTX
               range must win); a step is one range's push to the next one's;
  python       XTIMER_PY_TRACE='__main__:Optimizer.step@step' alone: a step is one call's entry
               to the next one's (the call itself is a fraction of the step: a histogram of the
               calls' durations would be far off);
  collectives  XTIMER_PY_TRACE=off, no range: the step guessed from the period over which the
               per-parameter all-reduces repeat.
Each rank's xtimer_step_seconds must carry that one source, and its mean (_sum / _count: all a
histogram tells exactly) must be within 5% of the mean of the same steps as the program measured
them (iteration top to top): the last _count of them, since a marked step lasts from its mark to
the next (one step fewer than marks) and the collectives' guess starts once the pattern is seen.
Steps are ~50 ms of data loading plus the rest, so the shift between where a source starts a step
and where the program does changes the mean by far less than 5%.

Usage: pysteps_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYSTEPS_PY
       PYDEMO_PY LIBPYDEMO_CORE LIBPYDEMO_NVTX
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, stop_daemon, wait_for)

RANKS = 2
STEPS = 40
# 8 all-reduces a step and ~50 ms steps: the newest 256 collectives a diagnosis pass looks at
# (docs/metrics.md) span 32 steps, 1.6 s, so the passes (one a second) observe every step from
# the first guess on, and the last _count steps the program measured are the ones xtimer did.
PARAMS, LOAD_MS = 8, 50
RANGE = "train_step"
OPTIMIZER = "__main__:Optimizer.step@step"
TOLERANCE = 0.05
PYTHON = "/usr/bin/python3"
TIMES = re.compile(r"^\[rank (\d+)\] pysteps: rank \d+ step-times-ns ([0-9,]+)$", re.M)
# source: (environment, the fewest steps the daemon must count per rank)
SOURCES = {
    "nvtx": ({"XTIMER_STEP_RANGE": RANGE, "XTIMER_PY_TRACE": OPTIMIZER}, STEPS - 1),
    "python": ({"XTIMER_PY_TRACE": OPTIMIZER}, STEPS - 1),
    "collectives": ({"XTIMER_PY_TRACE": "off"}, STEPS // 2),
}


def step_series(port, job):
    """{rank: (source, count, sum)} of the job's xtimer_step_seconds."""
    samples = parse(scrape(port))
    out = {}
    for labels, count in select(samples, "xtimer_step_seconds_count", job=job):
        total = select(samples, "xtimer_step_seconds_sum", job=job, rank=labels["rank"],
                       source=labels["source"])
        if labels["rank"] in out:
            fail("rank %s has two step sources: %s" % (labels["rank"], samples))
        out[labels["rank"]] = (labels["source"], count, total[0][1] if total else 0)
    return out


def run(p, args, source):
    extra, fewest = SOURCES[source]
    job_name = "pysteps-" + source
    go = os.path.join(p.tmp, "go-" + source)
    env = dict(os.environ)
    for var in ("LD_PRELOAD", "XTIMER_STEP_RANGE", "XTIMER_PY_TRACE", "XTIMER_DISABLE"):
        env.pop(var, None)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    env.update(extra)
    metrics, control = free_ports(2)
    run_dir = p.run_dir(source)
    argv = p.launch_argv(run_dir, metrics, control, job_name) + [
        PYTHON, p.demo_launch, "--nproc", str(RANKS), "--timeout", "240", "--",
        p.gpusim_run, PYTHON, args["pysteps"], "--lib-dir", args["lib_dir"], "--steps",
        str(STEPS), "--params", str(PARAMS), "--load-ms", str(LOAD_MS), "--wait-file", go] + \
        (["--nvtx", RANGE] if source == "nvtx" else [])
    job = Background(job_name, argv, env, p.tmp)
    try:
        wait_for("%s: every rank's step times" % source,
                 lambda: len(TIMES.findall(job.output())) == RANKS or job.proc.poll() is not None,
                 240)
        times = {r: [int(t) for t in ts.split(",")] for r, ts in TIMES.findall(job.output())}
        if len(times) != RANKS:
            fail("%s: step times of ranks %s:\n%s" % (source, sorted(times), job.output()))

        def counted():
            got = step_series(metrics, job_name)
            return got if len(got) == RANKS and all(
                c >= fewest for _, c, _ in got.values()) else None
        series = wait_for("%s: %d steps per rank in xtimer_step_seconds" % (source, fewest),
                          counted, 60)
        open(go, "w").close()
        status = job.wait(120)
        if status != 0:
            fail("%s: the job exited %d:\n%s" % (source, status, job.output()))
    finally:
        job.kill()
        stop_daemon(run_dir)
    check(source, series, times)


def check(source, series, times):
    for rank in sorted(times):
        got_source, count, total = series[str(rank)]
        if got_source != source:
            fail("rank %s: step source %r, want %r" % (rank, got_source, source))
        count = int(count)
        if count > STEPS:
            fail("rank %s: %d steps counted, the program ran %d" % (rank, count, STEPS))
        mine = times[rank][-count:]
        want = sum(mine) / len(mine) * 1e-9
        got = total / count
        log("%s: rank %s: %d steps, mean %.3f ms from xtimer, %.3f ms measured by the "
            "program (%+.2f%%)" % (source, rank, count, got * 1e3, want * 1e3,
                                   (got - want) / want * 100))
        if abs(got - want) > TOLERANCE * want:
            fail("%s: rank %s: mean step %.3f ms, the program's %.3f ms: off by more than "
                 "%d%%" % (source, rank, got * 1e3, want * 1e3, TOLERANCE * 100))


def main(argv):
    if len(argv) != 11:
        fail(__doc__)
    p = Paths(argv[:7], __doc__)
    pysteps, pydemo, core, nvtx = [os.path.abspath(a) for a in argv[7:11]]
    lib_dir = os.path.dirname(core)
    if os.path.dirname(nvtx) != lib_dir or os.path.dirname(pysteps) != os.path.dirname(pydemo):
        fail("pysteps.py needs pydemo.py beside it and the two modules in one directory")
    try:
        for source in SOURCES:
            run(p, {"pysteps": pysteps, "lib_dir": lib_dir}, source)
    finally:
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

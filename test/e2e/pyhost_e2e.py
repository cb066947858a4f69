#!/usr/bin/env python3
"""The Python demo job's host-side causes, per rank (docs/metrics.md "Python", docs/demo.md).

demo/python/pydemo.py runs 4 ranks on Debian's python3 under xtimer-launch with its own xtimerd,
CUDA, NCCL and cuBLAS (after step 3) through modules loaded RTLD_LOCAL (ctypes.CDLL, and the
extension module with importlib: --ext), with XTIMER_PY_TRACE='__main__:Loader.__next__@data':
rank SLOW's data loader waits DELAY_MS more per batch (--slow-loader) and rank GC runs
gc.collect() every step (--gc-rank).
While the ranks linger after their last step:
  - /metrics: SLOW's xtimer_python_data_wait_seconds_total is at least what its loader waited
    (STEPS x DELAY_MS) and above every other rank's by more than half of it; every rank counts
    STEPS data waits; GC's generation-2 pauses number at least STEPS and more than any other
    rank's;
  - `xtimer dump --history` then `xtimer timeline`, decoded with //timeline:trace_summary: rank
    SLOW's process has STEPS slices `__main__:Loader.__next__` on its xtimer.python NVTX track,
    each at least DELAY_MS long, and no other rank's is that long; rank GC's has at least STEPS
    `gc gen2` slices, more than any other rank's.

Usage: pyhost_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYDEMO_PY
       LIBPYDEMO_CORE XTIMER TRACE_SUMMARY PYDEMO_EXT LIBPYDEMO_GEMM
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, stop_daemon, wait_for)

JOB = "pyhost"
RANKS, STEPS = 4, 5
SLOW, GC = 1, 2
DELAY_MS = 200
# The loader builds each batch in Python (pydemo.inputs()): 4096 elements take a few ms, far
# from DELAY_MS even on a loaded machine.
ELEMENTS = 4096
LOADER = "__main__:Loader.__next__"
PYTHON = "/usr/bin/python3"


def per_rank(samples, name, **labels):
    return {int(l["rank"]): v for l, v in select(samples, name, job=JOB, **labels)}


def metrics_ready(port):
    samples = parse(scrape(port))
    waits = per_rank(samples, "xtimer_python_data_waits_total")
    gc2 = per_rank(samples, "xtimer_python_gc_pauses_total", generation="2")
    if sorted(waits) == list(range(RANKS)) and all(v == STEPS for v in waits.values()) and \
            gc2.get(GC, 0) >= STEPS:
        return samples
    return None


def check_metrics(samples):
    waited = per_rank(samples, "xtimer_python_data_wait_seconds_total")
    gc2 = per_rank(samples, "xtimer_python_gc_pauses_total", generation="2")
    gc2_s = per_rank(samples, "xtimer_python_gc_pause_seconds_total", generation="2")
    floor = STEPS * DELAY_MS / 1000
    others = [waited.get(r, 0) for r in range(RANKS) if r != SLOW]
    if waited.get(SLOW, 0) < floor or waited[SLOW] - max(others) < floor / 2:
        fail("data-loader wait per rank %s: rank %d must have waited >= %.3f s, far above the "
             "others" % (waited, SLOW, floor))
    if any(gc2.get(r, 0) >= gc2[GC] for r in range(RANKS) if r != GC):
        fail("generation-2 collections per rank %s: rank %d's must be the most" % (gc2, GC))
    log("/metrics: data-loader wait per rank %s s; gen-2 gc pauses per rank %s (%s s)" % (
        {r: round(v, 3) for r, v in sorted(waited.items())}, dict(sorted(gc2.items())),
        {r: round(v, 4) for r, v in sorted(gc2_s.items())}))


def host_slices(summary_tool, trace):
    """{rank: [(name, dur_ns)]} of the slices on each rank's xtimer.python NVTX track."""
    p = subprocess.run([summary_tool, trace], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("trace_summary %s failed (%d): %s" % (trace, p.returncode, p.stderr))
    t = json.loads(p.stdout)
    rank_of = {}
    for pr in t["processes"]:
        m = re.match(r"rank (\d+)", pr["name"])
        if m:
            rank_of[pr["pid"]] = int(m.group(1))
    python_tracks = {th["uuid"]: rank_of.get(th["pid"]) for th in t["threads"]
                     if th["name"].endswith("domain xtimer.python")}
    out = {}
    for s in t["slices"]:
        rank = python_tracks.get(s["track"])
        if rank is not None:
            out.setdefault(rank, []).append((s["name"], s["dur"]))
    return out


def check_trace(xtimer, summary_tool, control, tmp):
    dump_root = os.environ["XTIMER_DUMP_ROOT"]
    r = subprocess.run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % control, "--path", "host",
                        "--history", "100000", "--job", JOB], capture_output=True, text=True,
                       timeout=120)
    job_dir = os.path.join(dump_root, "host", JOB)
    if r.returncode != 0 or not os.path.isdir(job_dir):
        fail("xtimer dump exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    trace = os.path.join(tmp, "pyhost.pftrace")
    r = subprocess.run([xtimer, "timeline", job_dir, "-o", trace], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("xtimer timeline exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    slices = host_slices(summary_tool, trace)
    loads = {r: [d for n, d in slices.get(r, []) if n == LOADER] for r in range(RANKS)}
    gcs = {r: sum(1 for n, _ in slices.get(r, []) if n == "gc gen2") for r in range(RANKS)}
    long_ns = DELAY_MS * 1000000
    slow = [d for d in loads[SLOW] if d >= long_ns]
    if len(loads[SLOW]) != STEPS or len(slow) != STEPS:
        fail("rank %d's loader slices %s: want %d of at least %d ms" %
             (SLOW, loads[SLOW], STEPS, DELAY_MS))
    for r in range(RANKS):
        if r != SLOW and (len(loads[r]) != STEPS or any(d >= long_ns for d in loads[r])):
            fail("rank %d's loader slices %s: want %d shorter than %d ms" %
                 (r, loads[r], STEPS, DELAY_MS))
    if gcs[GC] < STEPS or any(gcs[r] >= gcs[GC] for r in range(RANKS) if r != GC):
        fail("gc gen2 slices per rank %s: rank %d's must be at least %d and the most" %
             (gcs, GC, STEPS))
    log("trace: loader slices per rank (ms) %s; gc gen2 slices per rank %s" % (
        {r: [round(d / 1e6, 1) for d in ds] for r, ds in loads.items()}, gcs))


def main(argv):
    if len(argv) != 13:
        fail(__doc__)
    p = Paths(argv[:7], __doc__)
    pydemo, core, xtimer, summary_tool, ext, gemm = [os.path.abspath(a) for a in argv[7:13]]
    if {os.path.dirname(ext), os.path.dirname(gemm)} != {os.path.dirname(core)}:
        fail("the modules of demo/python are in different directories")
    env = dict(os.environ)
    for var in ("LD_PRELOAD", "XTIMER_DISABLE", "XTIMER_STEP_RANGE"):
        env.pop(var, None)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    env["XTIMER_PY_TRACE"] = LOADER + "@data"
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    job = Background(JOB, p.launch_argv(run_dir, metrics, control, JOB) + [
        PYTHON, p.demo_launch, "--nproc", str(RANKS), "--timeout", "240", "--", p.gpusim_run,
        PYTHON, pydemo, "--lib-dir", os.path.dirname(core), "--steps", str(STEPS), "--elements",
        str(ELEMENTS), "--ext",
        "--slow-loader", "%d:%d" % (SLOW, DELAY_MS), "--gc-rank", str(GC), "--linger", "120"],
        env, p.tmp)
    try:
        wait_for("every rank lingering", lambda: len(re.findall(
            r"^\[rank \d+\] pydemo: lingering", job.output(), re.M)) == RANKS or
            job.proc.poll() is not None, 240)
        if job.proc.poll() is not None:
            fail("the job exited (%s) before every rank lingered:\n%s" %
                 (job.proc.returncode, job.output()))
        check_metrics(wait_for("every rank's data waits and rank %d's collections" % GC,
                               lambda: metrics_ready(metrics), 60))
        check_trace(xtimer, summary_tool, control, p.tmp)
    finally:
        job.kill()
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

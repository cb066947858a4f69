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
    `gc gen2` slices, more than any other rank's;
  - live, once the daemon's diagnosis has counted every collective instance (the ranks'
    xtimer_collective_arrived_last_total add up to the collectives each rank issued): its
    xtimer_straggler_host_seconds names rank SLOW alone (a straggler of cause host), its largest
    series of kind data_loading and name LOADER, at least (STEPS - 1) x DELAY_MS (the first
    step's collective has no window before it), and no series of kind gc;
  - offline, `xtimer analyze` of that dump: the first straggler is rank SLOW, cause host, its
    first host activity the data loader LOADER with at least as much, within 10% of the live
    figure; no straggler is rank GC and no verdict names a collection; the text report says
    "Rank SLOW ...: cause host (the host was in the data loader (LOADER) ...";
  - live through the CLI, `xtimer analyze --hosts` (HangCheck with the host spans the daemon
    read): the same verdict as offline.

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
# What the host straggler's loader is credited with at least: the loader's waits before every
# collective window but the first (the first collective of a rank has no window).
CREDIT_FLOOR_S = (STEPS - 1) * DELAY_MS / 1000
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


def live_counted(port):
    """The samples once the live diagnosis has counted every instance of the job's collectives:
    the ranks' arrived-last counts add up to the collectives each rank issued."""
    samples = parse(scrape(port))
    issued = per_rank(samples, "xtimer_hook_ops_total", kind="collective")
    last = sum(v for _, v in select(samples, "xtimer_collective_arrived_last_total", job=JOB))
    if sorted(issued) == list(range(RANKS)) and len(set(issued.values())) == 1 and \
            last >= issued[0] > 0:
        return samples
    return None


def check_live(samples):
    """The daemon's live verdict: rank SLOW a host straggler, in the data loader. Returns the
    seconds credited to the loader."""
    host = [(l, v) for l, v in select(samples, "xtimer_straggler_host_seconds", job=JOB)]
    seen = [(l.get("rank"), l.get("kind"), l.get("name"), round(v, 3)) for l, v in host]
    if not host or any(int(l["rank"]) != SLOW for l, _ in host):
        fail("live xtimer_straggler_host_seconds %s: want rank %d's alone" % (seen, SLOW))
    top = max(host, key=lambda lv: lv[1])
    if top[0]["kind"] != "data_loading" or top[0]["name"] != LOADER or top[1] < CREDIT_FLOOR_S:
        fail("live xtimer_straggler_host_seconds %s: want %s (data_loading) first, >= %.3f s" %
             (seen, LOADER, CREDIT_FLOOR_S))
    if any(l["kind"] == "gc" for l, _ in host):
        fail("live xtimer_straggler_host_seconds %s names a collection" % seen)
    log("live: xtimer_straggler_host_seconds %s" % seen)
    return top[1]


def check_verdict(xtimer, args, live_s):
    """`xtimer analyze ARGS --json`: rank SLOW first, cause host, in the data loader within 10% of
    the live figure; neither rank GC nor a collection named. Returns the stragglers, briefly."""
    r = subprocess.run([xtimer, "analyze"] + args + ["--json"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        fail("xtimer analyze %s --json exited %d:\n%s%s" % (args, r.returncode, r.stdout,
                                                            r.stderr))
    stragglers = json.loads(r.stdout)["stragglers"]
    brief = [(s["rank"], s["cause"], [(h["kind"], h["name"], round(h["seconds"], 3))
                                      for h in s.get("host", [])]) for s in stragglers]
    if not stragglers or stragglers[0]["rank"] != SLOW or stragglers[0]["cause"] != "host":
        fail("xtimer analyze %s: stragglers %s, want rank %d first, cause host" %
             (args, brief, SLOW))
    doing = (stragglers[0].get("host") or [{}])[0]
    if doing.get("kind") != "data_loading" or doing.get("name") != LOADER or \
            doing["seconds"] < CREDIT_FLOOR_S or abs(doing["seconds"] - live_s) > 0.1 * live_s:
        fail("xtimer analyze %s: rank %d's host %s: want %s (data_loading) first, >= %.3f s and "
             "within 10%% of the live %.3f s" % (args, SLOW, brief[0][2], LOADER, CREDIT_FLOOR_S,
                                                live_s))
    if any(s["rank"] == GC or any(h["kind"] == "gc" for h in s.get("host", []))
           for s in stragglers):
        fail("xtimer analyze %s: stragglers %s: rank %d's collections named" % (args, brief, GC))
    return brief


def check_offline(xtimer, job_dir, live_s):
    """`xtimer analyze` of the dump: the same verdict as live, in JSON and in the text."""
    brief = check_verdict(xtimer, [job_dir], live_s)
    r = subprocess.run([xtimer, "analyze", job_dir], capture_output=True, text=True, timeout=120)
    want = r"^  Rank %d on communicator \S+: cause host \(the host was in the data loader " \
           r"\(%s\) " % (SLOW, re.escape(LOADER))
    if r.returncode != 0 or not re.search(want, r.stdout, re.M):
        fail("xtimer analyze exited %d, no line /%s/:\n%s%s" % (r.returncode, want, r.stdout,
                                                               r.stderr))
    log("offline: xtimer analyze stragglers %s" % brief)


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
    return job_dir


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
        live_s = check_live(wait_for("the live diagnosis counting every collective instance",
                                     lambda: live_counted(metrics), 60))
        log("live: xtimer analyze --hosts stragglers %s" % check_verdict(
            xtimer, ["--hosts", "127.0.0.1:%d" % control, "--job", JOB], live_s))
        check_offline(xtimer, check_trace(xtimer, summary_tool, control, p.tmp), live_s)
    finally:
        job.kill()
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""One process that drives 4 devices is 4 ranks (issue 11, docs/ranks.md).

hook/programs/multi_device (nvcc-built, on the GPU simulator, under xtimer-launch) makes one
communicator over devices 0..3 with ncclCommInitAll, splits it into halves, and issues one
AllReduce per device on each per step from one thread. After it ends (its data stays for the
exited grace period):
- /metrics shows ranks 0..3, local_rank = device, each with its own AllReduce count: all equal,
  together the collectives the program says it issued; one registration; the same pid in every
  rank's xtimer_rank_info; the world communicator's comm_rank 0..3 once each; the ring's counters
  once for the process;
- Status lists the process once per device rank;
- a history dump writes 4 timeline files, 0000R-00004.timeline, whose communicator tables list
  every member (4 for the world communicator, 2 for each half), read back with the project's
  reader (//daemon:timeline_check);
- `xtimer timeline` makes one trace with 4 rank processes, decoded with //timeline:trace_summary:
  each collective's flow joins exactly its communicator's ranks; Perfetto's own trace processor
  loads it and agrees (timeline/perfetto_tp/check_trace.py).

Usage: multi_device_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER
                           MULTI_DEVICE TIMELINE_CHECK TRACE_SUMMARY CHECK_TRACE_PY QUERY_MJS
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Paths, fail, free_ports, log, parse, scrape, select,  # noqa: E402
                     status, stop_daemon)

JOB = "multi-device"
DEVICES = 4
STEPS = 300


def run(argv, timeout=120, env=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout + p.stderr


def wait_exited(metrics):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        s = parse(scrape(metrics))
        if select(s, "xtimer_processes_exited") == [({}, 1.0)]:
            return s
        time.sleep(0.2)
    fail("the daemon did not see the process exit within 30 s")


def check_metrics(s, issued):
    ranks = {}
    for labels, v in select(s, "xtimer_ops_total", job=JOB, kind="collective",
                            operation="AllReduce"):
        ranks[labels["rank"]] = ranks.get(labels["rank"], 0) + v
        if labels["local_rank"] != labels["rank"]:
            # InitAll gives device d rank d in the world communicator.
            fail("rank %s has local_rank %s" % (labels["rank"], labels["local_rank"]))
    want = [str(r) for r in range(DEVICES)]
    if sorted(ranks) != want:
        fail("AllReduce counts for ranks %s, want %s" % (sorted(ranks), want))
    counts = set(ranks.values())
    if len(counts) != 1 or sum(ranks.values()) != issued:
        fail("per-rank AllReduce counts %s: not equal, or not summing to the %d issued" %
             (ranks, issued))
    pids = {l["pid"] for l, _ in select(s, "xtimer_rank_info", job=JOB)}
    infos = select(s, "xtimer_rank_info", job=JOB)
    if len(infos) != DEVICES or len(pids) != 1:
        fail("xtimer_rank_info: %s" % infos)
    if select(s, "xtimer_registrations_total") != [({}, 1.0)]:
        fail("registrations: %s" % select(s, "xtimer_registrations_total"))
    written = select(s, "xtimer_ring_records_written_total", job=JOB)
    if len(written) != 1 or written[0][0]["rank"] != "0":
        fail("the ring's counters should appear once, on rank 0: %s" % written)
    by_comm = {}
    for labels, v in select(s, "xtimer_comm_size", job=JOB):
        by_comm.setdefault((labels["comm"], v), []).append(labels["rank"])
    world = [r for (c, size), r in by_comm.items() if size == DEVICES]
    halves = [r for (c, size), r in by_comm.items() if size == DEVICES // 2]
    if len(world) != 1 or sorted(world[0]) != want or len(halves) != 2:
        fail("communicators by size: %s" % by_comm)
    comm_ranks = sorted(v for l, v in select(s, "xtimer_comm_rank", job=JOB)
                        if (l["comm"], DEVICES) in by_comm)
    if comm_ranks != list(range(DEVICES)):
        fail("world communicator ranks %s" % comm_ranks)
    log("ranks 0..%d, %d AllReduce each (%d issued); pid %s; communicators %s" % (
        DEVICES - 1, counts.pop(), issued, pids.pop(), sorted(by_comm.items())))


def check_status(control):
    st = status(control)
    procs = [p for p in st["processes"] if p["job"] == JOB]
    got = sorted((p["rank"], p["local_rank"], p["device"]) for p in procs)
    if got != [(d, d, d) for d in range(DEVICES)] or len({p["pid"] for p in procs}) != 1:
        fail("Status lists %s" % got)
    if st["ranks"] != list(range(DEVICES)):
        fail("Status ranks %s" % st["ranks"])


def check_files(check, paths):
    p = subprocess.run([check] + paths, capture_output=True, text=True)
    infos = [json.loads(line) for line in p.stdout.splitlines()]
    if p.returncode != 0 or len(infos) != len(paths):
        fail("timeline_check failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    for info in infos:
        r = info["rank"]
        if not info["complete"] or info["world"] != DEVICES or info["kinds"].get("2", 0) == 0:
            fail("%s: %s" % (info["path"], info))
        sizes = sorted(c["size"] for c in info["comms"])
        if sizes != [DEVICES // 2, DEVICES]:
            fail("%s: communicators %s" % (info["path"], info["comms"]))
        for c in info["comms"]:
            if c["members"][c["rank"]] != r or sorted(c["members"]) != sorted(
                    range(r - r % c["size"], r - r % c["size"] + c["size"])):
                fail("rank %d: communicator members %s (its rank %d)" %
                     (r, c["members"], c["rank"]))
    # Each device's stream is synchronised from the one thread: each sync counts for the rank
    # of the stream's device (cudaStreamGetDevice), not the thread's current device.
    syncs = {i["rank"]: i["kinds"].get("8", 0) for i in infos}
    if len(set(syncs.values())) != 1 or 0 in syncs.values():
        fail("host syncs per rank differ: %s" % syncs)
    return infos


def check_trace(summary_tool, trace, infos):
    p = subprocess.run([summary_tool, trace], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("trace_summary %s failed (%d): %s" % (trace, p.returncode, p.stderr))
    t = json.loads(p.stdout)
    pids = sorted(pr["pid"] for pr in t["processes"])
    if pids != list(range(1, DEVICES + 1)):
        fail("trace processes %s, want pids 1..%d (ranks 0..%d)" % (pids, DEVICES, DEVICES - 1))
    pid_of = {th["uuid"]: th["pid"] for th in t["threads"]}
    slices = [s for s in t["slices"] if s["cat"] != "step"]  # the ops' (no steps track's)
    if len(slices) != sum(i["events"] for i in infos):
        fail("the trace has %d slices, the files %d events" %
             (len(slices), sum(i["events"] for i in infos)))
    joined = {}
    for s in slices:
        if s["cat"] != "collective":
            continue
        if len(s["flows"]) != 1:
            fail("collective slice %s carries flows %s" % (s["name"], s["flows"]))
        joined.setdefault((s["flows"][0], s["args"]["comm"]), set()).add(pid_of[s["track"]] - 1)
    by_size = {}
    for (flow, label), ranks in joined.items():
        members = sorted(int(r) for r in label.split(": ")[1].rstrip(")").split())
        if sorted(ranks) != members:
            fail("flow %s of %s joins ranks %s" % (flow, label, sorted(ranks)))
        by_size[len(members)] = by_size.get(len(members), 0) + 1
    if by_size.get(DEVICES, 0) < STEPS or by_size.get(DEVICES // 2, 0) < 2 * STEPS:
        fail("collective flows by communicator size: %s" % by_size)
    log("trace: %d rank processes, collective flows by communicator size %s" % (
        len(pids), by_size))


def main(argv):
    if len(argv) != 13:
        fail(__doc__)
    xtimer, program, check, summary_tool, check_trace_py, query_mjs = [
        os.path.abspath(a) for a in argv[7:]]
    p = Paths(argv[:7], __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    dump_root = os.path.join(p.tmp, "dumps")
    env = dict(os.environ, XTIMER_DUMP_ROOT=dump_root)
    try:
        rc, out = run(p.launch_argv(run_dir, metrics, control, JOB) + [
            p.gpusim_run, program, "--devices", str(DEVICES), "--steps", str(STEPS)],
            timeout=300, env=env)
        log("$ xtimer-launch multi_device --devices %d --steps %d\n%s" % (DEVICES, STEPS, out))
        m = re.search(r"(\d+) collectives issued", out)
        if rc != 0 or not m:
            fail("multi_device failed (%d)" % rc)
        check_metrics(wait_exited(metrics), int(m.group(1)))
        check_status(control)

        rc, out = run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % control, "--path", "run",
                       "--history", "100000"])
        log("$ xtimer dump --history 100000 --path run\n" + out)
        job_dir = os.path.join(dump_root, "run", JOB)
        names = sorted(os.listdir(job_dir)) if os.path.isdir(job_dir) else []
        want = ["%05d-%05d.timeline" % (r, DEVICES) for r in range(DEVICES)]
        if rc != 0 or names != want:
            fail("the dump wrote %s (exit %d), want %s" % (names, rc, want))
        infos = check_files(check, [os.path.join(job_dir, n) for n in names])

        trace = os.path.join(p.tmp, "multi.pftrace")
        rc, out = run([xtimer, "timeline", job_dir, "-o", trace])
        log("$ xtimer timeline run/%s -o multi.pftrace\n%s" % (JOB, out))
        if rc != 0 or "%d ranks" % DEVICES not in out:
            fail("xtimer timeline did not convert the %d ranks (exit %d)" % (DEVICES, rc))
        check_trace(summary_tool, trace, infos)
        r = subprocess.run([sys.executable, check_trace_py, query_mjs, summary_tool, trace],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail("Perfetto's trace processor on the trace:\n" + r.stdout + r.stderr[-2000:])
        log(r.stdout.strip())
    finally:
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Python stacks of a stuck Python job, through the real daemon (issue 21, docs/stacks.md).

The Python demo job (demo/python/pydemo.py: CUDA, cuBLAS and NCCL reached through modules it
loads with ctypes.CDLL, RTLD_LOCAL) runs 4 ranks under xtimer-launch with its own xtimerd, on
Debian's /usr/bin/python3 and on pyenv's 3.8, 3.12 and 3.13. Before step 2:
  - rank 0 spins in the Python function stall_in_python (--stall 0:2:python),
  - rank 1 sleeps in libc's sleep called through ctypes.PyDLL, holding the GIL, from
    stall_in_native (--stall 1:2:native),
  - ranks 2 and 3 go on into step 2's all-reduce and wait there for ranks 0 and 1.
Once ranks 2 and 3 wait in a collective their GPU started (xtimer_comm_inflight_info), the test
asks the daemon for every rank's stacks (DumpStack over HTTP, as curl would), merges
them with `xtimer stacks --json`, and requires:
  - 4 stack files written, none with an error;
  - ranks 2 and 3 in one group, and ranks 0 and 1 each an outlier group of its own;
  - rank 0's stack holds the Python frame stall_in_python at the spinning loop's lines of
    pydemo.py, rank 1's the Python frame stall_in_native at the line that calls sleep;
  - rank 1's innermost frames are native (libc's sleep), above the Python frames.
A pyenv version that is not installed is reported and skipped; Debian's python3 must be there.

Usage: pystacks_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYDEMO_PY
       LIBPYDEMO_CORE XTIMER
"""

import itertools
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, fail, free_ports, log, parse,  # noqa: E402
                     pythons, scrape, select, stop_daemon, wait_ranks)

RANKS = 4
STALL_STEP = 2
JOB = "pystacks"


def function_lines(path, name):
    """The line numbers of function `name`'s body in `path` (its def line excluded)."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = next(i for i, text in enumerate(lines) if text.startswith("def %s(" % name))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i] and not lines[i].startswith((" ", "#"))), len(lines))
    return set(range(start + 2, end + 1))


def python_frame(group, function):
    """The group's Python frame of `function`, or None."""
    return next((f for f in group["frames"]
                 if f["kind"] == "python" and f["function"] == function), None)


def check_summary(label, summary, pydemo):
    groups = {tuple(g["ranks"]): g for g in summary["groups"]}
    shown = json.dumps(summary, indent=1)
    if set(groups) != {(0,), (1,), (2, 3)}:
        fail("%s: groups %s, expected [0], [1] and [2, 3] (ranks 0 and 1 stalled, 2 and 3 in "
             "the all-reduce):\n%s" % (label, sorted(groups), shown))
    if groups[(2, 3)]["outlier"] or not groups[(0,)]["outlier"] or not groups[(1,)]["outlier"]:
        fail("%s: ranks 0 and 1 must be the outliers:\n%s" % (label, shown))
    for rank, function, lines in (
            (0, "stall_in_python", function_lines(pydemo, "stall_in_python")),
            (1, "stall_in_native", function_lines(pydemo, "stall_in_native"))):
        frame = python_frame(groups[(rank,)], function)
        if frame is None:
            fail("%s: rank %d's stack has no Python frame %s:\n%s" % (label, rank, function,
                                                                       shown))
        if os.path.basename(frame["module"]) != "pydemo.py" or frame["line"] not in lines:
            fail("%s: rank %d's %s frame is at %s:%s, expected pydemo.py lines %d-%d" %
                 (label, rank, function, frame["module"], frame["line"], min(lines),
                  max(lines)))
    if groups[(1,)]["frames"][0]["kind"] == "python":
        fail("%s: rank 1's innermost frame is Python, expected libc's sleep:\n%s" %
             (label, shown))
    log("%s: rank 0 in stall_in_python, rank 1 in %s <- stall_in_native (GIL held), ranks 2-3 "
        "together in %s" % (label, groups[(1,)]["frames"][0]["function"],
                            groups[(2, 3)]["frames"][0]["function"]))


def wait_waiting(label, metrics_port, ranks, timeout=120):
    """Waits until every rank of `ranks` has a collective in flight that its GPU started (it
    waits for its peers there): xtimer_comm_inflight_info, docs/metrics.md."""
    deadline = time.monotonic() + timeout
    while True:
        samples = select(parse(scrape(metrics_port)), "xtimer_comm_inflight_info", state="started")
        waiting = {int(labels["rank"]) for labels, _ in samples}
        if set(ranks) <= waiting:
            return
        if time.monotonic() > deadline:
            fail("%s: ranks %s never waited in a started collective (waiting: %s)" %
                 (label, ranks, sorted(waiting)))
        time.sleep(0.2)


def check_text(label, text):
    """summary.txt, what a user reads, names both stalled functions with pydemo.py's lines."""
    for rank, function in ((0, "stall_in_python"), (1, "stall_in_native")):
        if not re.search(r"(?m)^rank %d \(1\) in .*\b%s \(pydemo\.py:\d+\)" % (rank, function),
                         text):
            fail("%s: summary.txt does not name rank %d in %s (pydemo.py:LINE):\n%s" %
                 (label, rank, function, text))
    log("%s: summary.txt:\n%s" % (label, text.rstrip()))


def take_stacks(p, xtimer, label, control_port, out, attempt):
    reply = control(control_port, "DumpStack",
                    {"dump_path": "stacks%d" % attempt, "timeout_s": 10}, timeout=60)
    files = reply.get("files", [])
    bad = [f for f in files if f.get("outcome") != "written" or f.get("error")]
    if len(files) != RANKS or bad:
        fail("%s: DumpStack wrote %d files, expected %d, every one without error:\n%s" %
             (label, len(files), RANKS, json.dumps(reply, indent=1)))
    merged = subprocess.run([xtimer, "stacks", "--json", "-o", out,
                             reply["dump_dir"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=60)
    if merged.returncode != 0:
        fail("%s: xtimer stacks exited %d:\n%s" % (label, merged.returncode, merged.stderr))
    with open(os.path.join(out, "summary.txt")) as f:
        text = f.read()
    return json.loads(merged.stdout), text


def run_python(p, pydemo, lib_dir, xtimer, python):
    label = os.path.basename(python)
    run_dir = p.run_dir("pystacks-" + label)
    metrics_port, control_port = free_ports(2)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    argv = p.launch_argv(run_dir, metrics_port, control_port, JOB) + [
        python, p.demo_launch, "--nproc", str(RANKS), "--timeout", "300", "--",
        p.gpusim_run, python, pydemo, "--lib-dir", lib_dir, "--steps", "4", "--late-step", "4",
        "--stall", "0:%d:python" % STALL_STEP, "--stall", "1:%d:native" % STALL_STEP]
    job = Background("pystacks-" + label, argv, env, p.tmp)
    try:
        job.wait_for_line(r"(?m)^\[rank 1\] pydemo: stalling in stall_in_native", 180)
        job.wait_for_line(r"(?m)^\[rank 0\] pydemo: stalling in stall_in_python", 30)
        wait_ranks(control_port, list(range(RANKS)), 60)
        wait_waiting(label, metrics_port, [2, 3])
        # The waiting ranks' host threads may still be on their way to the wait (enqueueing the
        # step's later work): take stacks until they are grouped, 30 s at most.
        deadline = time.monotonic() + 30
        for attempt in itertools.count():
            summary, text = take_stacks(p, xtimer, label, control_port,
                                  os.path.join(p.tmp, "stacks-%s-%d" % (label, attempt)), attempt)
            ranks = sorted(tuple(g["ranks"]) for g in summary["groups"])
            if ranks == [(0,), (1,), (2, 3)] or time.monotonic() > deadline:
                break
            log("%s: groups %s, taking stacks again" % (label, ranks))
        check_summary(label, summary, pydemo)
        check_text(label, text)
    finally:
        job.kill()
        stop_daemon(run_dir)


def main(argv):
    if len(argv) != 10:
        fail(__doc__)
    p = Paths(argv[:7], __doc__)
    pydemo, core, xtimer = [os.path.abspath(a) for a in argv[7:10]]
    try:
        for python in pythons():
            run_python(p, pydemo, os.path.dirname(core), xtimer, python)
    finally:
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

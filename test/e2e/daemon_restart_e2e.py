#!/usr/bin/env python3
"""Two jobs on one node under xtimer-launch, with the node daemon killed and restarted mid-run.

  - two jobs (2 ranks each) share one node's xtimerd and are reported apart by their job label;
  - `kill -9` of xtimerd leaves both jobs running; they finish with exit 0;
  - a restarted xtimerd picks the running ranks up again (they re-register on their own) and their
    op counters grow again.

Usage: daemon_restart_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, daemon_pid, fail, free_ports, log, parse,  # noqa: E402
                     scrape, select, stop_daemon)


def ranks_up(port):
    text = scrape(port, must=False)
    if text is None:
        return {}, []
    samples = parse(text)
    up = {}
    for labels, v in select(samples, "xtimer_rank_up"):
        if v == 1:
            up.setdefault(labels["job"], set()).add(int(labels["rank"]))
    return up, samples


def wait_for_ranks(port, want, timeout, what):
    deadline = time.monotonic() + timeout
    up = {}
    while time.monotonic() < deadline:
        up, samples = ranks_up(port)
        if up == want:
            return samples
        time.sleep(0.2)
    fail("%s: ranks up %s, expected %s" % (what, up, want))


def ops(samples, job):
    return sum(v for l, v in select(samples, "xtimer_ops_total") if l["job"] == job)


def main(argv):
    p = Paths(argv, __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    env = dict(os.environ)
    env["XTIMER_SIM_TFLOPS_BF16"] = "0.02"  # GPU-bound: ~140 ms per step, ~8 s per job
    jobs = []
    try:
        for name in ("job-a", "job-b"):
            argv_j = p.launch_argv(run_dir, metrics, control, name) + [
                      sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "240", "--",
                      p.gpusim_run, p.train_step, "--tp", "2", "--steps", "60", "--hidden", "256",
                      "--seq", "256", "--layers", "2"]
            jobs.append(Background(name, argv_j, env, p.tmp))
        both = {"job-a": {0, 1}, "job-b": {0, 1}}
        samples = wait_for_ranks(metrics, both, 60, "before the kill")
        log("two jobs on one daemon, kept apart by the job label: %s" % sorted(both))

        pid = daemon_pid(run_dir)
        if pid is None:
            fail("no xtimerd.pid in " + run_dir)
        os.kill(pid, signal.SIGKILL)
        log("killed xtimerd (pid %d) with SIGKILL" % pid)
        # A fresh daemon on the same run directory (the killed one left its socket file behind);
        # the ranks re-register on their own.
        start = subprocess.run([p.xtimerd, "--daemonize", "--run-dir", run_dir, "--metrics-port",
                                str(metrics), "--control-port", str(control)],
                               capture_output=True, timeout=30)
        if start.returncode != 0:
            fail("restarting xtimerd failed: %s" % (start.stdout + start.stderr).decode())
        samples = wait_for_ranks(metrics, both, 30, "after the restart")
        # The jobs ran on while no daemon was there (a rank that died would not re-register).
        for j in jobs:
            if j.proc.poll() is not None:
                fail("%s stopped while the daemon was away (exit %s):\n%s" %
                     (j.name, j.proc.returncode, j.output()))
        before = ops(samples, "job-a")
        deadline = time.monotonic() + 30
        after = before
        while after <= before and time.monotonic() < deadline:
            time.sleep(0.2)
            up, samples = ranks_up(metrics)
            after = ops(samples, "job-a") if samples else before
        if after <= before:
            fail("job-a's op counter did not grow within 30 s of the restart (%d -> %d)" %
                 (before, after))
        log("restarted xtimerd picked all 4 ranks up again; job-a's ops grow (%d -> %d)" %
            (before, after))
        for j in jobs:
            status = j.wait(240)
            if status != 0:
                fail("%s exited %d:\n%s" % (j.name, status, j.output()))
        log("both jobs ran to completion with exit 0")
    finally:
        for j in jobs:
            j.kill()
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""`xtimer analyze --hosts` names the culprit of a hang across two emulated nodes.

A 4-rank job (demo/train_step, tp 4: one communicator spanning both nodes) runs as 2 ranks on
each of two emulated nodes, each node under its own xtimer-launch and xtimerd (own run
directory and ports; XTIMER_HANG_TIMEOUT=2). Rank 3 (node 1) stops in its 20th collective call
on the host (the simulator's XTIMER_SIM_HANG=3:20): nothing is enqueued, so ranks 0, 1 and 2 wait
in that collective. Node 0's daemon sees only victims (its ranks wait on remote members);
`xtimer analyze --hosts node0,node1 --json` asks both daemons (HangCheck) and must give the
verdict never_issued with culprit_ranks [3] and waiting ranks 0, 1 and 2, within 60 s of the hang;
node 0 alone must blame none of its ranks (waiting_on_remote) and exit 3 (partial). The clock
offsets of the two nodes (one machine's clock) must be within 0.5 ms of 0, however far apart the
daemons' diagnosis passes ran.

Usage: analyze_hosts_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, stop_daemon,  # noqa: E402
                     wait_ranks)

JOB = "e2e-analyze-hosts"
CULPRIT = 3


def analyze(xtimer, hosts):
    """(exit status, JSON report or None, stderr) of one `xtimer analyze --hosts` call."""
    r = subprocess.run([xtimer, "analyze", "--hosts", ",".join(hosts), "--json", "-q"],
                       capture_output=True, text=True, timeout=60)
    try:
        report = json.loads(r.stdout) if r.stdout.strip() else None
    except ValueError:
        fail("xtimer analyze --json printed no JSON (exit %d):\n%s\n%s" %
             (r.returncode, r.stdout, r.stderr))
    return r.returncode, report, r.stderr


def wait_verdict(xtimer, hosts, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        rc, report, err = analyze(xtimer, hosts)
        last = (rc, report, err)
        hang = report.get("hang") if report else None
        # A verdict may come while a victim is still on its way into the collective (a loaded
        # machine): it is then not yet waiting, and the verdict grows as it arrives. Wait for
        # the whole picture, but a wrong culprit at any moment is a failure.
        if hang and hang.get("culprit_ranks") not in (None, [], [CULPRIT]):
            fail("a verdict blamed %s, expected only rank %d: %s" %
                 (hang["culprit_ranks"], CULPRIT, json.dumps(hang)))
        if (hang and hang.get("kind") == "never_issued" and
                {0, 1, 2} <= set(hang.get("waiting_ranks") or [])):
            return rc, report
        time.sleep(1)
    fail("no never_issued verdict with ranks 0, 1 and 2 waiting from `xtimer analyze --hosts` "
         "within %d s; last answer "
         "(exit %s):\n%s\n%s" % (timeout, last[0], json.dumps(last[1], indent=1), last[2]))


# Both emulated nodes read this machine's one CLOCK_REALTIME, and the simulator gives every
# member of a collective the same end (computed from the members' arrivals, not observed after a
# scheduling delay): the offsets come out within a few microseconds (the answers' `now` is a
# double of Unix seconds; each rank's GPU-to-host anchor is the tightest of 8 tries), whatever
# the load. The daemons' passes run up to a second apart, which the offsets must not show.
OFFSET_MARGIN_S = 0.0005


def check_offsets(report):
    offsets = report.get("clock_offsets_s") or {}
    log("clock offsets: %s" % json.dumps(offsets))
    if len(offsets) != 2:
        fail("clock_offsets_s %s: expected one offset per emulated node" % json.dumps(offsets))
    for node, offset in offsets.items():
        if abs(offset) > OFFSET_MARGIN_S:
            fail("clock offset of %s is %+.6f s: both nodes share one clock (|offset| <= %g s "
                 "expected)" % (node, offset, OFFSET_MARGIN_S))


def main(argv):
    if len(argv) != 8:
        fail(__doc__)
    xtimer = os.path.abspath(argv[7])
    p = Paths(argv[:7], __doc__)
    run_dirs = [p.run_dir("node%d" % i) for i in range(2)]
    m0, m1, c0, c1 = free_ports(4)
    env = dict(os.environ)
    env.update({"XTIMER_HANG_TIMEOUT": "2", "XTIMER_SIM_HANG": "%d:20" % CULPRIT})
    nodes = []
    try:
        for i in range(2):
            argv_i = p.launch_argv(run_dirs[i], [m0, m1][i], [c0, c1][i], JOB) + [
                sys.executable, p.demo_launch, "--nnodes", "2", "--nproc-per-node", "2",
                "--node-rank", str(i), "--rdzv-dir", os.path.join(p.tmp, "rdzv"), "--timeout",
                "300", "--", p.gpusim_run, p.train_step, "--tp", "4", "--steps", "100000",
                "--hidden", "256", "--seq", "256", "--layers", "2"]
            nodes.append(Background("node%d" % i, argv_i, env, p.tmp))
        wait_ranks(c0, [0, 1], 120)
        wait_ranks(c1, [2, 3], 120)
        nodes[1].wait_for_line(r"XTIMER_SIM_HANG: rank %d hangs" % CULPRIT, 120)
        log("rank %d hangs in its 20th collective call (simulator knob); asking both daemons"
            % CULPRIT)
        hosts = ["127.0.0.1:%d" % c0, "127.0.0.1:%d" % c1]
        rc, report = wait_verdict(xtimer, hosts, 60)
        hang = report["hang"]
        log("verdict: %s" % json.dumps(hang))
        if hang["culprit_ranks"] != [CULPRIT]:
            fail("culprit_ranks %s, expected [%d]" % (hang["culprit_ranks"], CULPRIT))
        if not {0, 1, 2} <= set(hang["waiting_ranks"]):
            fail("waiting_ranks %s, expected ranks 0, 1 and 2 among them" % hang["waiting_ranks"])
        if CULPRIT in hang["waiting_ranks"]:
            fail("the culprit is also listed as waiting: %s" % hang["waiting_ranks"])
        if rc != 0:
            fail("xtimer analyze --hosts exited %d with every node answering" % rc)
        check_offsets(report)
        # Node 0 alone holds only victims, both inside the collective: it blames none of them
        # and says the cause is on members it cannot see (docs/analysis.md).
        rc_alone, alone, err = analyze(xtimer, hosts[:1])
        hang = (alone or {}).get("hang") or {}
        log("node 0 alone: exit %d, hang kind %s, culprits %s" %
            (rc_alone, hang.get("kind"), hang.get("culprit_ranks")))
        if hang.get("kind") != "waiting_on_remote" or hang.get("culprit_ranks"):
            fail("node 0 alone: expected waiting_on_remote blaming no rank, got %s\n%s" %
                 (json.dumps(hang), err))
        if rc_alone != 3:
            fail("node 0 alone: exit %d, expected 3 (partial: ranks 2 and 3 missing)" % rc_alone)
        if any(n.proc.poll() is not None for n in nodes):
            fail("the job was expected to stay hung, but a node's launcher exited")
    finally:
        for n in nodes:
            n.kill()
        for d in run_dirs:
            stop_daemon(d)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

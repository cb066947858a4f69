#!/usr/bin/env python3
"""A rank that crashes leaves its data behind (docs/metrics.md, docs/control.md).

Rank 1 of a 2-rank job dies of a real SIGSEGV at its first collective of step 3 (launch.py
--crash-step 1:3, which sets XTIMER_SIM_CRASH);
the launcher then stops rank 0. After the job has ended, the daemon must still export rank 1's
series with xtimer_rank_up 0, xtimer_rank_exit_code{cause="signal"} 11 and its last sequence
numbers per communicator; a history dump taken after the crash holds rank 1's timeline file; a
count dump of the ended job returns at once (well within its --timeout), exits 3 and names both
ranks as short; a dump_time in the past is refused with a pointer to --history.

Usage: crash_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, stop_daemon)

JOB = "crash"


def run(argv, timeout):
    start = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def one(samples, name, **labels):
    found = select(samples, name, job=JOB, **labels)
    if len(found) != 1:
        fail("expected one %s%s, found %s" % (name, labels, found))
    return found[0]


def check_metrics(metrics):
    """Rank 1's series outlive it, with its exit cause and last sequence numbers."""
    s = parse(scrape(metrics))
    if one(s, "xtimer_rank_up", rank="1")[1] != 0:
        fail("xtimer_rank_up of the crashed rank is not 0")
    labels, code = one(s, "xtimer_rank_exit_code", rank="1")
    if labels.get("cause") != "signal" or code != 11:
        fail("rank 1's exit cause is %s %s, want signal 11" % (labels.get("cause"), code))
    seqs = [(l["comm"], v) for l, v in select(s, "xtimer_comm_last_issued_seq", job=JOB, rank="1")
            if l["comm"] != "none"]
    if not seqs or max(v for _, v in seqs) <= 0:
        fail("no last sequence numbers of the crashed rank: %s" % seqs)
    ops = sum(v for _, v in select(s, "xtimer_ops_total", job=JOB, rank="1"))
    if ops <= 0:
        fail("the crashed rank's op counters are gone")
    r0 = select(s, "xtimer_rank_exit_code", job=JOB, rank="0")
    log("after the crash: rank 1 rank_up 0, exit signal 11, %d ops, last issued seq per comm %s; "
        "rank 0 exit %s" % (ops, seqs, [(l["cause"], v) for l, v in r0]))


def main(argv):
    if len(argv) != 8:
        fail(__doc__)
    xtimer = os.path.abspath(argv[7])
    p = Paths(argv[:7], __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    env = dict(os.environ)
    dump_root = os.path.join(p.tmp, "dumps")
    env.update({"XTIMER_CONTROL_PORT": str(control), "XTIMER_DUMP_ROOT": dump_root})
    job = Background("job", p.launch_argv(run_dir, metrics, control, JOB) + [
                     sys.executable, p.demo_launch, "--nproc", "2", "--crash-step", "1:3", "--grace", "1",
                     "--timeout",
                     "120", "--", p.gpusim_run, p.train_step, "--tp", "2", "--steps", "20",
                     "--hidden", "256", "--seq", "256", "--layers", "2"], env, p.tmp)
    try:
        job.wait_for_line(r"XTIMER_SIM_CRASH: rank 1 crashes", 90)
        rc = job.wait(120)
        log("the job ended with status %d (rank 1 crashed)" % rc)
        # The daemon sees both connections close within its next cycles.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = parse(scrape(metrics))
            if select(s, "xtimer_processes_registered") == [({}, 0.0)]:
                break
            time.sleep(0.2)
        else:
            fail("the ranks were still registered 30 s after the job ended")
        check_metrics(metrics)

        hosts = "127.0.0.1:%d" % control
        rc, out, _ = run([xtimer, "dump", "--hosts", hosts, "--path", "after", "--history",
                          "100000"], 60)
        log("$ xtimer dump --history 100000 --path after\n" + out)
        path = [l for l in out.splitlines() if "00001-00002.timeline" in l]
        if not os.path.isfile(os.path.join(dump_root, "after", JOB, "00001-00002.timeline")):
            fail("no timeline file of rank 1 in the history dump after the crash")
        if rc != 0 or not path or " 0 events" in path[0]:
            fail("the history dump after the crash holds no events of rank 1 (exit %d)" % rc)

        rc, out, took = run([xtimer, "dump", "--hosts", hosts, "--path", "ended", "--count",
                             "1000", "--delay", "0", "--timeout", "20"], 60)
        log("$ xtimer dump --count 1000 --delay 0 --timeout 20 (%.1f s)\n%s" % (took, out))
        if rc != 3 or took > 20:
            fail("a count dump of the ended job: exit %d after %.1f s, want 3 within 20 s" %
                 (rc, took))
        for rank in ("rank 0", "rank 1"):
            if rank + " of job " + JOB not in out or "(exited)" not in out:
                fail("the short-rank report does not name %s as exited" % rank)

        rc, out, _ = run([xtimer, "dump", "--hosts", hosts, "--path", "past", "--count", "10",
                          "--at", str(int(time.time()) - 3600)], 60)
        if rc != 1 or "in the past" not in out or "history" not in out:
            fail("a past dump_time was not refused with a pointer to history (exit %d):\n%s" %
                 (rc, out))
        log("a past dump_time is refused: " + [l for l in out.splitlines() if "past" in l][0])
    finally:
        job.kill()
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

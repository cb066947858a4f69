#!/usr/bin/env python3
"""A true hang, injected with the simulator's knob, shows up in the hang gauges.

Rank 1 of a 2-rank job blocks forever at its 3rd collective on a communicator
(XTIMER_SIM_HANG=1:3); rank 0's matching collective then stays in flight. With
XTIMER_HANG_TIMEOUT=2 the daemon must report xtimer_comm_waiting_hang = 1 and
xtimer_rank_waiting_hang = 1 for rank 0 (the victim) within a few seconds, 0 for rank 1 (the
culprit), xtimer_comm_inflight_info{state="started"} for rank 0's collective, and the in-flight age
must keep growing, while the job is still hung.

Usage: hang_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, stop_daemon)


def main(argv):
    p = Paths(argv, __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    env = dict(os.environ)
    env.update({"XTIMER_HANG_TIMEOUT": "2", "XTIMER_SIM_HANG": "1:3"})
    job = Background("job", p.launch_argv(run_dir, metrics, control, "hung") + [
                             sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "120", "--",
                             p.gpusim_run, p.train_step, "--tp", "2", "--steps", "5", "--hidden",
                             "256", "--seq", "256", "--layers", "2"], env, p.tmp)
    try:
        job.wait_for_line(r"XTIMER_SIM_HANG: rank 1 hangs", 60)
        log("rank 1 hangs (simulator knob); waiting for the daemon's hang gauges")
        deadline = time.monotonic() + 30
        found = None
        while time.monotonic() < deadline and found is None:
            text = scrape(metrics, must=False)
            if text:
                s = parse(text)
                comm = [l["comm"] for l, v in select(s, "xtimer_comm_waiting_hang", rank="0")
                        if v == 1 and l["comm"] != "none"]
                rank = [v for _, v in select(s, "xtimer_rank_waiting_hang", rank="0")]
                info = [l for l, v in select(s, "xtimer_comm_inflight_info", rank="0")
                        if comm and l["comm"] == comm[0] and v == 1]
                if comm and rank == [1] and info:
                    age = [v for _, v in select(s, "xtimer_comm_oldest_inflight_age_seconds",
                                                rank="0", comm=comm[0])]
                    culprit = [v for _, v in select(s, "xtimer_rank_waiting_hang", rank="1")]
                    found = (comm[0], age[0] if age else None, info[0], culprit)
            time.sleep(0.3)
        if found is None:
            fail("no communicator's hang gauge turned 1 for rank 0 within 30 s")
        if job.proc.poll() is not None:
            fail("the job was expected to stay hung, but exited %s" % job.proc.returncode)
        comm, age, info, culprit = found
        if info.get("state") != "started" or info.get("op") in (None, "Unknown"):
            fail("rank 0 waits inside its collective, yet xtimer_comm_inflight_info says %s" % info)
        if culprit != [0]:
            fail("xtimer_rank_waiting_hang of rank 1, the culprit, should be 0: got %s" % culprit)
        log("xtimer_comm_waiting_hang{rank=0, comm=%s} = 1, xtimer_rank_waiting_hang{rank=0} = 1 "
            "and {rank=1} = 0, oldest op in flight for %.1f s (hang timeout 2 s), inflight_info "
            "op=%s seq=%s state=%s; the job is still hung"
            % (comm, age, info["op"], info["seq"], info["state"]))
    finally:
        job.kill()
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

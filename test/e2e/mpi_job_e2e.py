#!/usr/bin/env python3
"""One job is one job under Open MPI's mpirun, with xtimer-launch before or after it.

A 4-rank job (demo/train_step, tp 2, on the GPU simulator) is started by the real
`mpirun --allow-run-as-root --oversubscribe -np 4` of Debian's openmpi-bin, twice:

  outside:  xtimer-launch mpirun -np 4 RANK_WRAPPER train_step   (one launcher for all ranks)
  inside:   mpirun -np 4 xtimer-launch RANK_WRAPPER train_step   (one launcher per rank)

No --job and no XTIMER_JOB: the label comes from util/job_identity.h. Each time, the node's
xtimerd must show ranks 0-3 under one job label, the same in /metrics and in Status, naming the
MPI job (mpi-<PMIx namespace>, no pid); and a history dump must write exactly one job folder,
named by that label, holding the 4 rank files. RANK_WRAPPER sets train_step's torchrun-style
RANK / WORLD_SIZE / LOCAL_RANK from Open MPI's OMPI_COMM_WORLD_* variables, as users of
torchrun-style programs under mpirun do; ranks meet through XTIMER_DEMO_RENDEZVOUS.

Usage: mpi_job_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, fail, free_ports, log, parse,  # noqa: E402
                     scrape, status, stop_daemon, wait_ranks)

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4"]
RANK_WRAPPER = ["sh", "-c", 'RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE '
                'LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK '
                'LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE exec "$@"', "rank-wrapper"]
# Every variable util/job_identity.h reads: the test's own environment must not name the job.
JOB_SOURCES = ["XTIMER_JOB", "XTIMER_JOB_DEFAULT", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
               "PMIX_NAMESPACE", "OMPI_MCA_orte_hnp_uri", "PMI_KVSNAME", "PMI_PORT", "JOB_NAME"]
LABEL = re.compile(r"^mpi-[0-9]+$")


def job_labels(port):
    """{job label: set of ranks} over every per-rank sample of the daemon's /metrics."""
    jobs = {}
    for _, labels, _ in parse(scrape(port)):
        if "job" in labels and "rank" in labels:
            jobs.setdefault(labels["job"], set()).add(int(labels["rank"]))
    return jobs


def wait_history(port, want, timeout):
    """Waits until every registered rank has at least `want` records kept for history dumps."""
    deadline = time.monotonic() + timeout
    kept = None
    while time.monotonic() < deadline:
        kept = sorted(int(pr["history"]) for pr in status(port)["processes"])
        if kept and kept[0] >= want:
            return
        time.sleep(0.3)
    fail("daemon on :%d: records kept per rank %s, expected >= %d" % (port, kept, want))


def stop_job(job, pids):
    """SIGTERM to the launcher or mpirun (both pass it on), then make sure no rank is left."""
    if job.proc.poll() is None:
        os.kill(job.proc.pid, signal.SIGTERM)
        try:
            job.proc.wait(timeout=60)
        except Exception:  # noqa: BLE001 - any failure to stop: kill below
            pass
    job.kill()
    for pid in pids:  # ranks this test started (pids from the daemon's Status)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def check_order(p, order, program):
    run_dir = p.run_dir(order)
    metrics, ctl = free_ports(2)
    root = os.path.join(p.tmp, "dumps-" + order)
    env = {k: v for k, v in os.environ.items() if k not in JOB_SOURCES}
    env["XTIMER_DUMP_ROOT"] = root
    env["XTIMER_DEMO_RENDEZVOUS"] = tempfile.mkdtemp(prefix="rdzv-", dir=p.tmp)
    launch = p.launch_argv(run_dir, metrics, ctl, None)
    argv = launch + MPIRUN + program if order == "outside" else MPIRUN + launch + program
    log("%s: $ %s" % (order, " ".join(os.path.basename(a) if a.startswith("/") else a
                                      for a in argv)))
    job = Background("mpirun-" + order, argv, env, p.tmp)
    pids = []
    try:
        s = wait_ranks(ctl, [0, 1, 2, 3], 180)
        pids = [pr["pid"] for pr in s["processes"]]
        status_jobs = {pr["job"] for pr in s["processes"]}
        if len(status_jobs) != 1:
            fail("%s: Status shows the ranks under several jobs: %s" % (order, status_jobs))
        label = status_jobs.pop()
        if not LABEL.match(label):
            fail("%s: job label %r is not Open MPI's job (mpi-<namespace>)" % (order, label))
        jobs = job_labels(metrics)
        if list(jobs) != [label] or jobs[label] != {0, 1, 2, 3}:
            fail("%s: /metrics has jobs and ranks %s, expected {%r: {0, 1, 2, 3}}" %
                 (order, jobs, label))
        log("%s: ranks 0-3 under one job label %r in Status and /metrics" % (order, label))

        wait_history(ctl, 100, 60)
        answer = control(ctl, "DumpKernelTrace", {"dump_path": "run", "history": 100}, timeout=30)
        folders = sorted(os.listdir(os.path.join(root, "run")))
        if folders != [label]:
            fail("%s: the dump wrote folders %s, expected one: %s" % (order, folders, label))
        files = sorted(os.listdir(os.path.join(root, "run", label)))
        want = ["%05d-00004.timeline" % r for r in range(4)]
        if files != want or len(answer["files"]) != 4:
            fail("%s: the job folder holds %s (answer: %s), expected %s" %
                 (order, files, answer, want))
        for f in answer["files"]:
            if f["job"] != label or f["error"] or int(f["events"]) != 100:
                fail("%s: dumped file %s" % (order, f))
        log("%s: the dump wrote one job folder %s/ with %s" % (order, label, " ".join(files)))
        return label
    finally:
        stop_job(job, pids)
        stop_daemon(run_dir)


def main(argv):
    p = Paths(argv, __doc__)
    if shutil.which("mpirun") is None:
        fail("mpirun not found: install Debian's openmpi-bin (tools/install-deps.sh)")
    program = RANK_WRAPPER + [p.gpusim_run, p.train_step, "--tp", "2", "--steps", "100000",
                              "--hidden", "256", "--seq", "256", "--layers", "2"]
    try:
        labels = [check_order(p, order, program) for order in ("outside", "inside")]
    finally:
        p.cleanup()
    if labels[0] == labels[1]:
        fail("two runs got the same label %r: each mpirun is a job of its own" % labels[0])
    log("two mpirun jobs, two labels: %s" % " ".join(labels))
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

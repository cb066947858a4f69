#!/usr/bin/env python3
"""The cluster recipes of docs/deploy.md: each gives one job with the right ranks in a real xtimerd.

A 4-rank job (demo/train_step, tp 2, on the GPU simulator) runs four ways, each with its own
xtimerd (free ports), no --job and no XTIMER_JOB, so that the label comes from the launcher's
environment (util/job_identity.h):

  torchrun:  xtimer-launch torchrun --nproc-per-node 4 --rdzv-id ID PROGRAM
             (torchrun is not installed: test/e2e/fake_launchers/torchrun sets what its agent
             sets, TORCHELASTIC_RUN_ID..., and demo/launch.py the per-rank RANK, LOCAL_RANK,
             WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR...); label ID
  slurm:     deploy/slurm/xtimer.sbatch PROGRAM in a batch step's environment (SLURM_JOB_ID,
             SLURM_NTASKS...), its `srun xtimer-launch` served by test/e2e/fake_launchers/srun
             (Slurm is not installed: it sets SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_ID... per
             task as srun does); label slurm-<SLURM_JOB_ID>
  outside:   xtimer-launch mpirun -np 4 RANK_WRAPPER PROGRAM   (the real mpirun of Debian's
             openmpi-bin, --allow-run-as-root --oversubscribe)
  inside:    mpirun -np 4 xtimer-launch RANK_WRAPPER PROGRAM   (one launcher per rank)
             label mpi-<PMIx namespace>, a different one for each mpirun

Each time, the node's xtimerd must show ranks 0-3 under one job label, the same in /metrics and
in Status; and a history dump must write exactly one job folder, named by that label, holding
the 4 rank files. RANK_WRAPPER sets train_step's torchrun-style RANK / WORLD_SIZE / LOCAL_RANK
from Open MPI's OMPI_COMM_WORLD_* variables, as users of torchrun-style programs under mpirun
do; ranks meet through XTIMER_DEMO_RENDEZVOUS.

During the Slurm run a real Prometheus with deploy/prometheus/xtimer-scrape.yml (the node file,
rule path and intervals replaced) must see ranks 0-3 under the job's label and node="127.0.0.1".

Usage: cluster_recipes_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH SBATCH
       FAKE_SRUN FAKE_TORCHRUN SCRAPE_YML RULES_YML
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, fail, free_ports, log, parse,  # noqa: E402
                     prometheus_query, scrape, status, stop_daemon, wait_ranks)

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4"]
MPI_RANK_WRAPPER = ["sh", "-c", 'RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE '
                'LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK '
                'LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE exec "$@"', "rank-wrapper"]
# Every variable util/job_identity.h reads: the test's own environment must not name the job.
JOB_SOURCES = ["XTIMER_JOB", "XTIMER_JOB_DEFAULT", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
               "PMIX_NAMESPACE", "OMPI_MCA_orte_hnp_uri", "PMI_KVSNAME", "PMI_PORT", "JOB_NAME"]
MPI_LABEL = re.compile(r"^mpi-[0-9]+$")
TORCHRUN_ID = "rdzv-e2e-17"
SLURM_JOB_ID = "4242"


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


def recipe_env(p, run_dir, metrics, ctl, root):
    """The test's environment with no job source, a dump root and a rendezvous directory; the
    launcher's settings also as variables (a launcher started by srun gets no flags from us)."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_SOURCES}
    env.update({"XTIMER_DUMP_ROOT": root, "XTIMER_RUN_DIR": run_dir,
                "XTIMER_METRICS_PORT": str(metrics), "XTIMER_CONTROL_PORT": str(ctl),
                "XTIMER_LIB": p.lib, "XTIMER_DAEMON_BIN": p.xtimerd,
                "XTIMER_DEMO_RENDEZVOUS": tempfile.mkdtemp(prefix="rdzv-", dir=p.tmp)})
    return env


def recipe_argv(p, name, launch, program, sbatch):
    """The command line of recipe `name` and the variables its launcher sets around it."""
    if name == "torchrun":
        return launch + ["torchrun", "--nproc-per-node", "4", "--rdzv-id", TORCHRUN_ID,
                         "--no-python"] + program, {}
    if name == "slurm":  # the batch step's environment, as sbatch sets it
        return [sbatch] + program, {
            "SLURM_JOB_ID": SLURM_JOB_ID, "SLURM_JOBID": SLURM_JOB_ID, "SLURM_NTASKS": "4",
            "SLURM_NPROCS": "4", "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1",
            "SLURM_NODEID": "0", "SLURM_JOB_NAME": "train", "SLURM_SUBMIT_DIR": p.tmp,
            "SLURM_JOB_NODELIST": "localhost", "SLURM_TASKS_PER_NODE": "4",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_ports(1)[0])}
    program = MPI_RANK_WRAPPER + program
    return (launch + MPIRUN + program if name == "outside" else MPIRUN + launch + program), {}


def prometheus_ready(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def check_scrape_config(p, scrape_yml, rules_yml, metrics, label):
    """A real Prometheus with deploy/prometheus/xtimer-scrape.yml (its node file, rule path and
    intervals replaced) scrapes the daemon: every rank keeps the training job's label
    (honor_labels) and carries node="127.0.0.1" (the relabeling)."""
    targets = os.path.join(p.tmp, "xtimer-nodes.yml")
    with open(targets, "w") as f:
        f.write("- targets: ['127.0.0.1:%d']\n" % metrics)
    with open(scrape_yml) as f:
        text = f.read()
    for old, new in [("'/etc/prometheus/xtimer-nodes/*.yml'", "'%s'" % targets),
                     ("  - xtimer-rules.yml", "  - '%s'" % rules_yml),
                     ("scrape_interval: 5s", "scrape_interval: 1s"),
                     ("scrape_timeout: 4s", "scrape_timeout: 1s"),
                     ("refresh_interval: 30s", "refresh_interval: 1s")]:
        if old not in text:
            fail("%s no longer holds %r: update this test" % (scrape_yml, old))
        text = text.replace(old, new)
    config = os.path.join(p.tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write(text)
    port = free_ports(1)[0]
    prom = Background("prometheus", ["prometheus", "--config.file=" + config,
                                     "--storage.tsdb.path=" + os.path.join(p.tmp, "tsdb"),
                                     "--web.listen-address=127.0.0.1:%d" % port], os.environ, p.tmp)
    try:
        deadline, seen = time.monotonic() + 90, []
        while time.monotonic() < deadline and not prometheus_ready(port):
            time.sleep(0.3)
        while time.monotonic() < deadline:
            seen = prometheus_query(port, "xtimer_rank_up")
            if len(seen) >= 4:
                break
            time.sleep(0.5)
        got = sorted((l.get("job"), l.get("node"), l.get("rank")) for l, _ in seen)
        want = [(label, "127.0.0.1", str(r)) for r in range(4)]
        if got != want:
            fail("Prometheus with deploy/prometheus/xtimer-scrape.yml sees xtimer_rank_up %s, "
                 "expected (job, node, rank) %s" % (got, want))
        log("a real Prometheus with xtimer-scrape.yml: ranks 0-3 of job %r, node 127.0.0.1"
            % label)
    finally:
        prom.stop()


def check_recipe(p, name, program, tools, want_label, scrape_files=None):
    """Runs recipe `name`; fails unless ranks 0-3 show under one label that `want_label` matches."""
    run_dir = p.run_dir(name)
    metrics, ctl = free_ports(2)
    root = os.path.join(p.tmp, "dumps-" + name)
    env = recipe_env(p, run_dir, metrics, ctl, root)
    env["PATH"] = tools[1] + ":" + env.get("PATH", "/usr/bin:/bin")
    env["XTIMER_DEMO_LAUNCH"] = p.demo_launch
    argv, extra = recipe_argv(p, name, p.launch_argv(run_dir, metrics, ctl, None), program,
                              tools[0])
    env.update(extra)
    log("%s: $ %s" % (name, " ".join(os.path.basename(a) if a.startswith("/") else a
                                     for a in argv)))
    job = Background("job-" + name, argv, env, p.tmp)
    pids = []
    try:
        s = wait_ranks(ctl, [0, 1, 2, 3], 180)
        pids = [pr["pid"] for pr in s["processes"]]
        status_jobs = {pr["job"] for pr in s["processes"]}
        if len(status_jobs) != 1:
            fail("%s: Status shows the ranks under several jobs: %s" % (name, status_jobs))
        label = status_jobs.pop()
        if not want_label.match(label):
            fail("%s: job label %r is not the launcher's job (%s)" % (name, label, want_label.pattern))
        jobs = job_labels(metrics)
        if list(jobs) != [label] or jobs[label] != {0, 1, 2, 3}:
            fail("%s: /metrics has jobs and ranks %s, expected {%r: {0, 1, 2, 3}}" %
                 (name, jobs, label))
        log("%s: ranks 0-3 under one job label %r in Status and /metrics" % (name, label))
        if scrape_files:
            check_scrape_config(p, scrape_files[0], scrape_files[1], metrics, label)

        wait_history(ctl, 100, 60)
        answer = control(ctl, "DumpKernelTrace", {"dump_path": "run", "history": 100}, timeout=30)
        folders = sorted(os.listdir(os.path.join(root, "run")))
        if folders != [label]:
            fail("%s: the dump wrote folders %s, expected one: %s" % (name, folders, label))
        files = sorted(os.listdir(os.path.join(root, "run", label)))
        want = ["%05d-00004.timeline" % r for r in range(4)]
        if files != want or len(answer["files"]) != 4:
            fail("%s: the job folder holds %s (answer: %s), expected %s" %
                 (name, files, answer, want))
        for f in answer["files"]:
            if f["job"] != label or f["error"] or int(f["events"]) != 100:
                fail("%s: dumped file %s" % (name, f))
        log("%s: the dump wrote one job folder %s/ with %s" % (name, label, " ".join(files)))
        return label
    finally:
        stop_job(job, pids)
        stop_daemon(run_dir)


def main(argv):
    if len(argv) != 12:
        fail(__doc__)
    p = Paths(argv[:7], __doc__)
    sbatch, srun, torchrun, scrape_yml, rules_yml = [os.path.abspath(a) for a in argv[7:]]
    if shutil.which("mpirun") is None:
        fail("mpirun not found: install Debian's openmpi-bin (tools/install-deps.sh)")
    # srun, torchrun and xtimer-launch by name, as the recipes call them.
    fake_bin = tempfile.mkdtemp(prefix="bin-", dir=p.tmp)
    for path, name in [(srun, "srun"), (torchrun, "torchrun"), (p.launch, "xtimer-launch")]:
        os.symlink(path, os.path.join(fake_bin, name))
    program = [p.gpusim_run, p.train_step, "--tp", "2", "--steps", "100000", "--hidden", "256",
               "--seq", "256", "--layers", "2"]
    tools = (sbatch, fake_bin)
    try:
        check_recipe(p, "torchrun", program, tools, re.compile("^%s$" % TORCHRUN_ID))
        check_recipe(p, "slurm", program, tools, re.compile("^slurm-%s$" % SLURM_JOB_ID),
                     (scrape_yml, rules_yml))
        labels = [check_recipe(p, order, program, tools, MPI_LABEL)
                  for order in ("outside", "inside")]
    finally:
        p.cleanup()
    if labels[0] == labels[1]:
        fail("two runs got the same label %r: each mpirun is a job of its own" % labels[0])
    log("two mpirun jobs, two labels: %s" % " ".join(labels))
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

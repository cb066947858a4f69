"""Emulated nodes for the diagnosis job (//demo:diag_job): per node an xtimerd with its own run
directory, ports, dump root and host label, one real Prometheus scraping them all with the
shipped rules, and jobs started as one demo/launch.py per node under xtimer-launch (as torchrun
runs multi-node). Shared by diagnosis_e2e.py and tools/fault_campaign."""

import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, control, fail, free_ports, log, parse,  # noqa: E402
                     prometheus_query, scrape, select, start_prometheus, status, stop_daemon)

# The simulated links. Latency 0 so that a collective's transfer time is bytes / rate exactly
# (the model: latency + bus bytes / bandwidth, docs/gpusim-nccl.md); rates low enough that every
# transfer lasts long against timer noise.
INTRA_GBPS = 4.0
INTER_GBPS = 2.0
# GEMMs at 100 TFLOPS: diag_job's 8 GEMMs of 8192^3 model 88 ms per step, more than the
# simulator's host work per step on a loaded 2-core machine, so that the GPU, not the host, sets
# the pace (as in a real job; diag_job queues up to 2 steps ahead) and a rank's extra compute
# shows as lateness.
TFLOPS_BF16 = 100
STEP_GPU_MS = 8 * 2 * 8192 ** 3 / (TFLOPS_BF16 * 1e12) * 1e3
SIM_ENV = {
    "XTIMER_SIM_TFLOPS_BF16": str(TFLOPS_BF16),
    "XTIMER_SIM_INTRA_BW_GBPS": str(INTRA_GBPS),
    "XTIMER_SIM_INTER_BW_GBPS": str(INTER_GBPS),
    "XTIMER_SIM_INTRA_LAT_US": "0",
    "XTIMER_SIM_INTER_LAT_US": "0",
    # The simulated GPUs' executors above the machine's other work (a real GPU does not slow
    # down when the host's CPUs are busy; the simulator's threads would): with four busy
    # processes beside the suite, starved transfers read as a slow link on a healthy job.
    "XTIMER_SIM_DEVICE_NICE": "-10",
}


def run(argv, timeout=120):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def wait_for(what, probe, timeout):
    """Polls probe() until it returns a true value; that value, or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.5)
    fail("%s: not within %d s (last: %s)" % (what, timeout, last))


class Cluster:
    """`nodes` emulated nodes: per node a daemon (own run directory, ports, dump root, host
    label nodeI); `hang_timeout` sets the daemons' XTIMER_HANG_TIMEOUT (None: their default);
    `scrape_every` is Prometheus' (interval, timeout) of the daemons, `prometheus_nice` its
    niceness (e2e_lib.start_prometheus)."""

    def __init__(self, p, xtimer, diag_job, rules, nodes=2, hang_timeout=None,
                 scrape_every=("1s", "1s"), prometheus_nice=0):
        self.p, self.xtimer, self.diag_job = p, xtimer, diag_job
        ports = free_ports(2 * nodes + 1)
        self.metrics, self.controls = ports[0:nodes], ports[nodes:2 * nodes]
        self.prom_port = ports[2 * nodes]
        self.run_dirs = [p.run_dir("node%d" % i) for i in range(nodes)]
        self.roots = [os.path.join(p.tmp, "dumps%d" % i) for i in range(nodes)]
        self.daemons = []
        self.prometheus = None
        for i in range(nodes):
            os.makedirs(self.roots[i])
            env = dict(os.environ, XTIMER_HOST="node%d" % i, XTIMER_DUMP_ROOT=self.roots[i])
            if hang_timeout is not None:
                env["XTIMER_HANG_TIMEOUT"] = str(hang_timeout)
            self.daemons.append(Background("xtimerd%d" % i, [
                p.xtimerd, "--run-dir", self.run_dirs[i], "--metrics-port", str(self.metrics[i]),
                "--control-port", str(self.controls[i])], env, p.tmp))
        for i in range(nodes):
            deadline = time.monotonic() + 120
            while scrape(self.metrics[i], must=False) is None:
                if time.monotonic() > deadline:
                    fail("xtimerd%d did not serve /metrics within 120 s" % i)
                time.sleep(0.2)
        self.prometheus = start_prometheus(self.prom_port, self.metrics, p.tmp,
                                           rule_files=[rules], scrape_every=scrape_every,
                                           nice=prometheus_nice)
        self.hosts = self.hosts_of(nodes)

    def hosts_of(self, nodes):
        """The --hosts list of the first `nodes` daemons."""
        return ",".join("127.0.0.1:%d" % c for c in self.controls[:nodes])

    def stop(self):
        if self.prometheus:
            self.prometheus.kill()
        for d in self.daemons:
            d.kill()
        for d in self.run_dirs:
            stop_daemon(d)

    def start_job(self, job, flags, steps, env_extra=None, grace=300, linger=0, nodes=2,
                  per_node=4):
        """Launchers of job `job` on the first `nodes` nodes, `per_node` ranks each: diag_job
        with `flags`; returns their Backgrounds."""
        env = dict(os.environ, **SIM_ENV)
        env.update(env_extra or {})
        rdzv = os.path.join(self.p.tmp, "rdzv-" + job)
        launchers = []
        for i in range(nodes):
            argv = self.p.launch_argv(self.run_dirs[i], self.metrics[i], self.controls[i], job) + [
                sys.executable, self.p.demo_launch, "--nnodes", str(nodes), "--nproc-per-node",
                str(per_node), "--node-rank", str(i), "--rdzv-dir", rdzv, "--timeout", "600",
                "--grace", str(grace), "--", self.p.gpusim_run, self.diag_job, "--steps",
                str(steps), "--linger", str(linger)] + flags
            env_i = dict(env, XTIMER_HOST="node%d" % i)
            launchers.append(Background("%s-node%d" % (job, i), argv, env_i, self.p.tmp))
        return launchers

    # ---- live views
    def culprits_metric(self, job, nodes=None):
        """{(kind, rank)} from the daemons' xtimer_hang_culprit series of `job`, and
        (kind, "none") for each xtimer_hang_verdict of a kind that blames no rank."""
        out = set()
        for m in self.metrics[:nodes]:
            samples = parse(scrape(m))
            for labels, v in select(samples, "xtimer_hang_culprit", job=job):
                if v == 1:
                    out.add((labels.get("kind"), labels.get("rank")))
            for labels, v in select(samples, "xtimer_hang_verdict", job=job):
                if v == 1 and labels.get("kind") == "stuck_in_collective":
                    out.add((labels.get("kind"), "none"))
        return out

    def hang_checks(self, job, nodes=None):
        answers = []
        for c in self.controls[:nodes]:
            try:
                answers.append(control(c, "HangCheck", {"job": job}))
            except OSError as e:
                fail("HangCheck on :%d failed: %s" % (c, e))
        return answers

    def verdicts(self, job, nodes=None):
        return [v for a in self.hang_checks(job, nodes) for v in a.get("verdicts", [])]

    def rule_culprits(self, job):
        """{(kind, rank)} of the rules' xtimer:job_hang_culprit series of `job`."""
        return {(labels.get("kind"), labels.get("rank")) for labels, _ in
                prometheus_query(self.prom_port, 'xtimer:job_hang_culprit{job="%s"}' % job)}

    # ---- offline
    def dump(self, job, path, nodes=None, history=100000):
        """`xtimer dump --hosts` of the nodes' last `history` events per rank (default: the
        whole histories); the job folders."""
        nodes = nodes or len(self.roots)
        rc, out, err = run([self.xtimer, "dump", "--hosts", self.hosts_of(nodes), "--path", path,
                            "--history", str(history), "--job", job], timeout=120)
        if rc != 0:
            fail("xtimer dump exited %d:\n%s%s" % (rc, out, err))
        return [os.path.join(root, path, job) for root in self.roots[:nodes]]

    def analyze_hosts(self, job, groups):
        """`xtimer analyze --hosts` of every node, live: the JSON report."""
        return self.analyze(["--hosts", self.hosts_of(len(self.roots)), "--job", job], groups)

    def analyze(self, dirs, groups):
        rc, out, err = run([self.xtimer, "analyze"] + dirs + ["--groups", groups, "--json"],
                           timeout=120)
        if rc not in (0, 3):
            fail("xtimer analyze %s exited %d:\n%s%s" % (dirs, rc, out, err))
        if os.environ.get("DIAG_E2E_VERBOSE"):
            log("xtimer analyze %s:\n%s%s" % (" ".join(dirs), out, err))
        try:
            return json.loads(out)
        except ValueError:
            fail("xtimer analyze did not print JSON:\n%s%s" % (out, err))

    def auto_dump_dirs(self, job):
        """The newest automatic dump folder of `job` on each node that wrote one."""
        out = []
        for root in self.roots:
            found = glob.glob(os.path.join(root, "hang-*", job))
            if found:  # folders are named after the hang, not the time: the newest by mtime
                out.append(max(found, key=os.path.getmtime))
        return out

    def wait_running(self, launchers, job, nodes=2, per_node=4, alive=True):
        """Waits until each of the first `nodes` daemons has its node's ranks of `job` with
        records flowing (the daemons also list the ended jobs of earlier runs); alive False:
        registered is enough, exited or not (a fault in the first step may end a rank first)."""
        for i, port in enumerate(self.controls[:nodes]):
            want = list(range(i * per_node, (i + 1) * per_node))

            def ready():
                try:
                    procs = status(port)["processes"]
                except OSError as e:  # a loaded machine may delay one answer past 5 s
                    return log("Status on :%d: %s" % (port, e))
                return sorted(p["rank"] for p in procs if p.get("job") == job and (not alive or (
                    int(p["records_written"]) > 0 and not p.get("exited")))) == want
            wait_for("%s: ranks %s registered on :%d" % (job, want, port), ready, 120)
        for n in launchers if alive else []:
            if n.proc.poll() is not None:
                fail("%s exited %s:\n%s" % (n.name, n.proc.returncode, n.output()))

#!/usr/bin/env python3
"""The Grafana dashboard and the Prometheus rules against a real Prometheus scraping the demo.

The demo job (8 ranks, 2 emulated nodes, tp2-pp2-dp2, each node under its own xtimer-launch and
xtimerd) runs with rank 5's GPU 1.3x slower (a compute straggler) until rank 1 stops in host code
at its first TP collective of step HANG_STEP (a never_issued hang). A real Prometheus scrapes both
daemons every second with honor_labels and evaluates deploy/prometheus/xtimer-rules.yml. The test
checks:
  - the dashboard is Grafana JSON with a ${DS_PROMETHEUS} datasource input that every panel and
    query uses, and a `job` variable;
  - every query of every panel (with $job set to the job) returns data at some point of the run,
    and no sample of any of them, at any poll, is NaN or Inf;
  - the rules' true bus bandwidth of each communicator agrees with the daemons'
    xtimer_bus_bandwidth_true_bytes_per_second (one formula: bus bytes / transfer time) within 5%;
  - the rules name the culprit across nodes: xtimer:job_hang_culprit is rank 1, kind never_issued
    and nothing else, within 30 s of the hang, and the XtimerHangNeverIssued alert fires; the
    straggler verdict names rank 5 with cause compute;
  - every rule evaluates without error (Prometheus's /api/v1/rules health), and no sample of any
    series the rules recorded during the run is NaN or Inf.

Usage: grafana_dashboard_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
       RULES.yml DASHBOARD.json
"""

import json
import math
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, check_rules_finite,  # noqa: E402
                     check_true_bus_bandwidth, fail, free_ports, log, prometheus_query,
                     start_prometheus, stop_daemon, true_bus_bandwidths)

JOB = "grafana-e2e"
CULPRIT = "1"      # stops in host code before a TP collective (node 0)
STRAGGLER = "5"    # its kernels and GEMMs take 1.3x longer (node 1)
HANG_STEP = 200    # 100-200 ms a step: the straggler and the rates have half a minute of data
# The simulated GPU's bf16 rate: low enough that the GPU, not the host, bounds each rank (as in
# demo_metrics_e2e), so that rank 5's slower GPU makes its peers wait.
TFLOPS_BF16 = 0.1
VERDICT_DEADLINE_S = 30.0   # issue 10: a verdict within 30 s of the last progress
RUN_DEADLINE_S = 300


def dashboard_queries(path):
    """[(panel title, refId, expr)] of the dashboard; fails on a malformed dashboard."""
    with open(path) as f:
        dash = json.load(f)
    inputs = [i.get("name") for i in dash.get("__inputs", []) if i.get("type") == "datasource"]
    if inputs != ["DS_PROMETHEUS"]:
        fail("the dashboard's __inputs should declare one datasource DS_PROMETHEUS, got %s" % inputs)
    variables = [v.get("name") for v in dash.get("templating", {}).get("list", [])]
    if "job" not in variables:
        fail("the dashboard has no `job` variable: %s" % variables)
    out = []
    for panel in dash.get("panels", []):
        if panel.get("type") == "row":
            continue
        title = panel.get("title", "?")
        if panel.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            fail("panel %r does not use the ${DS_PROMETHEUS} datasource" % title)
        targets = panel.get("targets") or fail("panel %r has no query" % title)
        for t in targets:
            if t.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                fail("panel %r query %s does not use ${DS_PROMETHEUS}" % (title, t.get("refId")))
            out.append((title, t["refId"], t["expr"]))
    if not out:
        fail("the dashboard has no queries")
    return out


def rules_health(port):
    """[(rule name, health, lastError)] of every rule Prometheus loaded."""
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/rules" % port, timeout=5) as r:
        body = json.load(r)
    return [(rule["name"], rule.get("health"), rule.get("lastError", ""))
            for g in body["data"]["groups"] for rule in g["rules"]]


def wait_ready(prom, port, seconds=60):
    """Waits until Prometheus answers /-/ready (it has loaded its config and rules)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if prom.proc.poll() is not None:
            fail("prometheus exited (%s):\n%s" % (prom.proc.returncode, prom.output()))
        time.sleep(0.3)
    fail("prometheus was not ready within %d s:\n%s" % (seconds, prom.output()))


def start_nodes(p, metrics_ports, control_ports, env):
    rdzv = os.path.join(p.tmp, "rdzv")
    nodes, run_dirs = [], []
    for i in range(2):
        run_dir = p.run_dir("node%d" % i)
        run_dirs.append(run_dir)
        argv = p.launch_argv(run_dir, metrics_ports[i], control_ports[i], JOB) + [
            sys.executable, p.demo_launch, "--nnodes", "2", "--nproc-per-node", "4",
            "--node-rank", str(i), "--rdzv-dir", rdzv, "--timeout", str(RUN_DEADLINE_S),
            "--slow-rank", STRAGGLER + ":1.3", "--hang-step", "%s:%d" % (CULPRIT, HANG_STEP),
            "--", p.gpusim_run, p.train_step, "--tp", "2", "--pp", "2", "--steps", "1000",
            "--hidden", "512", "--seq", "512"]
        nodes.append(Background("node%d" % i, argv, env, p.tmp))
    return nodes, run_dirs


class Watch:
    """Polls every dashboard query and the verdicts once a second; remembers what it saw."""

    def __init__(self, prom_port, queries):
        self.port = prom_port
        self.queries = queries
        self.first_data = {}          # (title, refId) -> seconds since start
        self.culprits = set()         # (kind, rank, comm) of xtimer:job_hang_culprit
        self.first_culprit = None     # monotonic time of the first hang verdict
        self.alert_fired = None
        self.stragglers = set()       # (rank, cause, comm) of xtimer:straggler
        self.nonfinite = {}           # (title, refId) -> (labels, value) of a NaN / Inf sample
        self.bandwidth = {}           # comm -> (rules' true bus bandwidth, daemons'), B/s
        self.t0 = time.monotonic()

    def poll(self, running):
        """One poll; `running`: the job still makes progress (bandwidth is compared then, while
        the rules' one-minute window holds only steady steps)."""
        now = time.monotonic()
        for title, ref, expr in self.queries:
            result = prometheus_query(self.port, expr)
            for labels, v in result:
                if not math.isfinite(v) and (title, ref) not in self.nonfinite:
                    self.nonfinite[(title, ref)] = (labels, v)
                    log("after %.0f s: %s (%s) has %s for %s" % (now - self.t0, title, ref, v,
                                                                labels))
            if (title, ref) not in self.first_data and result:
                self.first_data[(title, ref)] = now - self.t0
                log("data after %.0f s: %s (%s)" % (now - self.t0, title, ref))
        if running:
            self.poll_bandwidth()
        for labels, v in prometheus_query(self.port, 'xtimer:job_hang_culprit{job="%s"}' % JOB):
            culprit = (labels.get("kind"), labels.get("rank"), labels.get("comm"))
            if culprit not in self.culprits:
                log("after %.0f s: hang culprit %s (stalled %.0f s)" % (now - self.t0, culprit, v))
                self.culprits.add(culprit)
            if self.first_culprit is None:
                self.first_culprit = now
        for labels, v in prometheus_query(self.port, 'xtimer:straggler{job="%s"}' % JOB):
            straggler = (labels.get("rank"), labels.get("cause"), labels.get("comm"))
            if straggler not in self.stragglers:
                log("after %.0f s: straggler %s (%.2f ms per collective)" %
                    (now - self.t0, straggler, v * 1e3))
                self.stragglers.add(straggler)
        if self.alert_fired is None and prometheus_query(
                self.port, 'ALERTS{alertname="XtimerHangNeverIssued", alertstate="firing", '
                           'job="%s", rank="%s"}' % (JOB, CULPRIT)):
            self.alert_fired = now

    def poll_bandwidth(self):
        """The latest pair seen of each communicator's true bus bandwidth (rules, daemons):
        one formula over different windows (the rules' last minute, the gauge's last 256
        collectives), which agree while the transfer rate is steady, as in this GPU-bound job."""
        self.bandwidth.update(true_bus_bandwidths(self.port, JOB))

    def done(self):
        return len(self.first_data) == len(self.queries) and self.alert_fired is not None


def check_verdicts(watch, hang_at):
    if watch.first_culprit is None:
        fail("the rules named no hang culprit (xtimer:job_hang_culprit stayed empty)")
    kinds = {(kind, rank) for kind, rank, _ in watch.culprits}
    if kinds != {("never_issued", CULPRIT)}:
        fail("xtimer:job_hang_culprit should name rank %s (never_issued) only, got %s" %
             (CULPRIT, sorted(watch.culprits)))
    latency = watch.first_culprit - hang_at
    log("hang verdict across nodes: rank %s never_issued on %s, %.1f s after the hang; alert "
        "firing after %.1f s" % (CULPRIT, sorted(c for _, _, c in watch.culprits), latency,
                                 watch.alert_fired - hang_at))
    if latency > VERDICT_DEADLINE_S:
        fail("the hang verdict came %.1f s after the hang (at most %.0f s)" %
             (latency, VERDICT_DEADLINE_S))
    if not any(r == STRAGGLER and c == "compute" for r, c, _ in watch.stragglers):
        fail("xtimer:straggler never named rank %s with cause compute: %s" %
             (STRAGGLER, sorted(watch.stragglers)))
    log("stragglers named: %s" % sorted(watch.stragglers))


def check_numbers(watch):
    """No panel showed NaN or Inf; the rules' true bus bandwidth is the daemons'."""
    if watch.nonfinite:
        fail("dashboard queries returned NaN or Inf:\n%s" % "\n".join(
            "  %s (%s): %s for %s" % (t, r, v, labels)
            for (t, r), (labels, v) in sorted(watch.nonfinite.items())))
    check_true_bus_bandwidth(watch.bandwidth, JOB)


def main(argv):
    if len(argv) != 9:
        fail(__doc__)
    rules, dashboard = os.path.abspath(argv[7]), os.path.abspath(argv[8])
    queries = [(t, r, e.replace("$job", JOB)) for t, r, e in dashboard_queries(dashboard)]
    log("%d queries in %d panels" % (len(queries), len({t for t, _, _ in queries})))
    p = Paths(argv[:7], __doc__)
    m0, m1, c0, c1, prom_port = free_ports(5)
    prom = start_prometheus(prom_port, [m0, m1], p.tmp, rule_files=[rules])
    nodes, run_dirs = [], []
    try:
        wait_ready(prom, prom_port)
        env = dict(os.environ, XTIMER_SIM_TFLOPS_BF16=str(TFLOPS_BF16))
        nodes, run_dirs = start_nodes(p, [m0, m1], [c0, c1], env)
        watch = Watch(prom_port, queries)
        hang_at = None
        deadline = time.monotonic() + RUN_DEADLINE_S
        while time.monotonic() < deadline and not (watch.done() and hang_at is not None):
            if hang_at is None and re.search(r"XTIMER_SIM_HANG: rank %s hangs" % CULPRIT,
                                             nodes[0].output()):
                hang_at = time.monotonic()
                log("rank %s hangs (after %.0f s)" % (CULPRIT, hang_at - watch.t0))
            for i, node in enumerate(nodes):
                if node.proc.poll() is not None:
                    fail("node %d's job ended (%s) before the checks were done:\n%s" %
                         (i, node.proc.returncode, node.output()[-3000:]))
            watch.poll(running=hang_at is None)
            time.sleep(1)
        missing = [(t, r, e) for t, r, e in queries if (t, r) not in watch.first_data]
        if missing:
            fail("%d of %d dashboard queries never returned data:\n%s" % (
                len(missing), len(queries),
                "\n".join("  %s (%s): %s" % m for m in missing)))
        log("every one of the %d dashboard queries returned data" % len(queries))
        if hang_at is None:
            fail("rank %s never reported its hang:\n%s" % (CULPRIT, nodes[0].output()[-3000:]))
        check_verdicts(watch, hang_at)
        check_numbers(watch)
        bad = [h for h in rules_health(prom_port) if h[1] != "ok"]
        if bad:
            fail("rules that do not evaluate cleanly: %s" % bad)
        log("every rule evaluates without error")
        check_rules_finite(prom_port, JOB)
    finally:
        for node in nodes:
            node.stop()
        prom.kill()
        for d in run_dirs:
            stop_daemon(d)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

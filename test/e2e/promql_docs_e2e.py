#!/usr/bin/env python3
"""Every ```promql block of the docs, evaluated by a real Prometheus against a real job.

The expressions are read from the Markdown files given on the command line (so a new one cannot
go untested): each block is one expression, and EXPECTED below holds its expected answer,
computed from the job's known parameters (the simulator's modelled bf16 rate, the injected hang's
culprit) or, for plain unit conversions, from the daemon's own exposition. A block with no entry
in EXPECTED, or an entry with no block, fails the test.

The job: 2 ranks, tp2, on the GPU simulator under xtimer-launch, GEMMs modelled at 0.1 TFLOPS;
rank 1 hangs at its first TP collective of step 3 (--hang-step 1:3: its host thread never issues
that collective), so rank 0 waits in it forever. XTIMER_HANG_TIMEOUT=2 turns that into the hang
gauges. Prometheus scrapes the node's daemon every second with honor_labels.

Usage: promql_docs_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH DOC.md...
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse,  # noqa: E402
                     prometheus_query as query, scrape, select, start_prometheus, stop_daemon)

TFLOPS_BF16 = 0.1  # XTIMER_SIM_TFLOPS_BF16 for the job
TOLERANCE = 0.05   # the measured rate vs the model (as demo_metrics_e2e)
# One rank's weighted rate vs the model: a loaded machine stretches one rank's simulated GEMMs
# by several % (rank 1 read 0.0945 of 0.10 once in the suite, rank 0 0.1000), while a unit slip
# is off by 1e3 and a sum that forgets to divide by the rank's GEMM time by far more than 20%.
TOLERANCE_RANK = 0.2
JOB = "promql-docs"
CULPRIT = "1"
BLOCK = re.compile(r"^```promql[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def normalize(expr):
    return " ".join(expr.split())


def doc_expressions(paths):
    """[(expression, where)] for every ```promql block."""
    out = []
    for path in paths:
        with open(path) as f:
            text = f.read()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((normalize(m.group(1)), "%s:%d" % (os.path.basename(path), line)))
    return out


def key(labels):
    """Series identity shared by the exposition and Prometheus results (minus target labels)."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in ("__name__", "instance")))


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


# ------------------------------------------------------------------------- expected answers
# Each takes (result, ctx) and returns None when the answer is right, else what is wrong.
# result: [(labels, value)]; ctx: the daemon's exposition samples, the hung communicator and the
# culprit's collective call (on it) that never happens.

def same_as_exposition(name, scale, **want):
    def check(result, ctx):
        expected = {key(l): v * scale for l, v in select(ctx["samples"], name, **want)}
        got = {key(l): v for l, v in result}
        if not expected:
            return "the daemon exports no %s series to compare with" % name
        if set(got) != set(expected):
            return "series differ: got %s, the exposition has %s" % (sorted(got), sorted(expected))
        bad = [(k, got[k], expected[k]) for k in got if not close(got[k], expected[k])]
        return "values differ: %s" % bad if bad else None
    return check


def tflops_per_series(result, ctx):
    problem = same_as_exposition("xtimer_matmul_flop_per_second", 1e-12)(result, ctx)
    if problem:
        return problem
    bf16 = sorted(v for l, v in result if l.get("dtype") == "bf16")
    # The median series: a unit slip is off by 1e3 or more, while one series of a window can read
    # a few % slow on a loaded machine (one read 0.0949 of 0.10 once, the others 0.09997-0.1000).
    if not bf16 or abs(bf16[len(bf16) // 2] - TFLOPS_BF16) > TOLERANCE * TFLOPS_BF16:
        return "bf16 series should read %.2f TFLOPS (the model), got %s" % (TFLOPS_BF16, bf16)
    return None


def slowest_p99(result, ctx):
    p99 = [v for _, v in select(ctx["samples"], "xtimer_op_latency_p99_seconds",
                                operation="AllReduce", job=JOB)]
    if not p99:
        return "the daemon exports no AllReduce p99"
    got = {l.get("job"): v for l, v in result}
    if set(got) != {JOB} or not close(got[JOB], max(p99)):
        return "want {%s: %g} (max over ranks of the exposition), got %s" % (JOB, max(p99), got)
    return None


def tflops_per_rank(result, ctx):
    got = {(l.get("job"), l.get("rank")): v for l, v in result}
    want = {(JOB, "0"), (JOB, "1")}
    if set(got) != want:
        return "want one series per rank %s, got %s" % (sorted(want), got)
    off = {k: v for k, v in got.items() if abs(v - TFLOPS_BF16) > TOLERANCE_RANK * TFLOPS_BF16}
    return "want %.2f TFLOPS per rank (the model), got %s" % (TFLOPS_BF16, got) if off else None


def issued_skew(result, ctx):
    got = {l.get("comm"): v for l, v in result}
    issued = {}
    for l, v in select(ctx["samples"], "xtimer_comm_last_issued_seq"):
        issued.setdefault(l["comm"], []).append(v)
    want = {c: max(v) - min(v) for c, v in issued.items() if c != "none"}
    if got != want or want.get(ctx["hung_comm"], 0) < 1:
        return "want %s (the exposition's skew, >= 1 on the hung communicator %s), got %s" % (
            want, ctx["hung_comm"], got)
    others = [c for c, v in got.items() if v != 0 and c != ctx["hung_comm"]]
    return "only the hung communicator may show a skew: %s" % got if others else None


def culprit(result, ctx):
    got = [(l.get("rank"), l.get("comm")) for l, _ in result]
    want = [(CULPRIT, ctx["hung_comm"])]
    if got != want:
        return "want exactly %s, got %s" % (want, got)
    if not result[0][1] < ctx["hang_call"]:
        return "the culprit never issued call %d, yet its issued sequence reads %g" % (
            ctx["hang_call"], result[0][1])
    return None


def any_hang(result, ctx):
    got = {l.get("job"): v for l, v in result}
    return None if got == {JOB: 1.0} else "want {%s: 1}, got %s" % (JOB, got)


def no_drops(result, ctx):
    return None if not result else "no ring dropped a record, yet got %s" % result


EXPECTED = {
    "xtimer_matmul_flop_per_second / 1e12": tflops_per_series,
    "xtimer_collective_bus_bandwidth_bytes_per_second / 1e9":
        same_as_exposition("xtimer_collective_bus_bandwidth_bytes_per_second", 1e-9),
    "xtimer_op_latency_p99_seconds * 1e6": same_as_exposition("xtimer_op_latency_p99_seconds", 1e6),
    'max by (job) (xtimer_op_latency_p99_seconds{operation="AllReduce"})': slowest_p99,
    "sum by (job, rank) (xtimer_matmul_flop_per_second * xtimer_op_latency_avg_seconds * "
    "xtimer_op_window_ops) / sum by (job, rank) (xtimer_op_latency_avg_seconds{kind=\"matmul\"} * "
    "xtimer_op_window_ops{kind=\"matmul\"}) / 1e12": tflops_per_rank,
    'max by (comm) (xtimer_comm_last_issued_seq{comm!="none"}) - min by (comm) '
    '(xtimer_comm_last_issued_seq{comm!="none"})': issued_skew,
    'xtimer_comm_last_issued_seq{comm!="none"} < on (comm) group_left max by (comm) '
    '(xtimer_comm_last_issued_seq{comm!="none"})': culprit,
    "max by (job) (xtimer_rank_waiting_hang) == 1": any_hang,
    "rate(xtimer_ring_records_dropped_total[5m]) > 0": no_drops,
}


def wait_for(what, predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    fail("timed out after %d s waiting for %s" % (seconds, what))


def main(argv):
    exprs = doc_expressions(argv[7:])
    if not exprs:
        fail("no ```promql block in %s" % argv[7:])
    missing = [(e, w) for e, w in exprs if e not in EXPECTED]
    stale = sorted(set(EXPECTED) - {e for e, _ in exprs})
    if missing or stale:
        fail("docs and EXPECTED disagree: blocks with no expected answer %s; answers with no "
             "block %s" % (missing, stale))
    p = Paths(argv[:7], __doc__)
    run_dir = p.run_dir("node")
    metrics, control, prom_port = free_ports(3)
    env = dict(os.environ)
    env.update({"XTIMER_HANG_TIMEOUT": "2", "XTIMER_SIM_TFLOPS_BF16": str(TFLOPS_BF16)})
    prom = start_prometheus(prom_port, [metrics], p.tmp)
    job = Background("job", p.launch_argv(run_dir, metrics, control, JOB) + [
        sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "300", "--hang-step",
        CULPRIT + ":3", "--", p.gpusim_run, p.train_step, "--tp", "2", "--steps", "5",
        "--hidden", "256", "--seq", "256", "--layers", "2"], env, p.tmp)
    try:
        job.wait_for_line(r"XTIMER_SIM_HANG: rank %s hangs" % CULPRIT, 120)
        log("rank %s hangs (simulator knob); waiting for the hang gauges" % CULPRIT)
        def hung_comms():
            samples = parse(scrape(metrics, must=False) or "")
            return [l["comm"] for l, v in select(samples, "xtimer_comm_waiting_hang", rank="0")
                    if v == 1 and l["comm"] != "none"]
        wait_for("xtimer_comm_waiting_hang = 1 on rank 0", hung_comms, 60)
        wait_for("Prometheus to see the hang", lambda: query(prom_port, "xtimer_rank_waiting_hang == 1"), 30)
        time.sleep(2)  # a last scrape after the gauges settled
        samples = parse(scrape(metrics))
        # Ops queued behind the stuck collective (on other communicators of rank 0) may pass the
        # hang timeout too: the stuck one is the communicator whose oldest op is the oldest.
        ages = {l["comm"]: v for l, v in select(samples, "xtimer_comm_oldest_inflight_age_seconds",
                                                 rank="0")}
        hung = sorted(hung_comms(), key=lambda c: -ages.get(c, 0))
        # launch.py turns --hang-step into the simulator's XTIMER_SIM_HANG=R:N:C and prints it.
        m = re.search(r"XTIMER_SIM_HANG=%s:(\d+)" % CULPRIT, job.output())
        if not m:
            fail("the job did not print its XTIMER_SIM_HANG setting:\n" + job.output())
        ctx = {"samples": samples, "hung_comm": hung[0], "hang_call": int(m.group(1))}
        failures = []
        for expr, where in exprs:
            problem = EXPECTED[expr](query(prom_port, expr), ctx)
            log("%s %s: %s" % ("FAIL" if problem else "ok", where, expr))
            if problem:
                failures.append("%s: %s\n    %s" % (where, expr, problem))
        if failures:
            fail("%d of %d documented expressions are wrong:\n%s" % (len(failures), len(exprs),
                                                                      "\n".join(failures)))
        log("all %d documented PromQL expressions give their expected answers" % len(exprs))
    finally:
        job.kill()
        prom.kill()
        stop_daemon(run_dir)
        p.cleanup()


if __name__ == "__main__":
    main(sys.argv)

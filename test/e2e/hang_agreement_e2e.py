#!/usr/bin/env python3
"""One hang, one truth (issues 18, 37): every second of a hang, a crash or a mismatch, every
surface says the same thing.

SCENARIO (the last argument; default hang) picks the fault of rank 5 at step 40:

  hang      --stop-before-dp-allreduce: the culprit {(never_issued, 5)}, as below
  crash     --crash 5:40:segv, before its TP all-reduce: {(exited, 5)}. The daemons name an
            abnormal exit at once, before any peer waits past its threshold, so the waiting
            ranks may be none at first (the surfaces must still agree on them every second) and
            must be some before the end; the rules name it at once as the job's first failure
            (xtimer:job_first_failure) and, once peers wait, as xtimer:job_hang_culprit's
            exited: their view is both, as (exited, rank)
  mismatch  --mismatch-dtype 5:40: ncclInt32 where its peers of the loss all-reduce (ranks 4-7,
            all on node 1) pass ncclFloat32: {(mismatch, 5)}. The culprit waits in its own call,
            so it counts among the waiting ranks here

The stacks check (below) is the hang scenario's.

The diagnosis job on 2 emulated nodes (8 ranks, tp2-pp2-dp2, each node its own xtimerd, one
real Prometheus with the shipped rules); in the hang scenario rank 5 stops in host code, in a
function of its own, before the DP all-reduce of step 40 (--stop-before-dp-allreduce): its DP
peer (7) waits in that all-reduce, its pipeline peer (1) in the embedding all-reduce, its TP peer
(4) and 6 in the loss all-reduce, the others behind them, every host in cudaEventSynchronize of
step 40's event. From the moment the fault is printed, once a second, the test reads every
surface:

  metric     the daemons' xtimer_hang_culprit / xtimer_hang_verdict series
  gauges     the waiting gauges: ranks with xtimer_rank_waiting_hang 1
  status     Status: ranks whose process says `hang`
  hangcheck  HangCheck: the verdicts' (kind, culprit) and waiting ranks, and the ranks whose
             progress shows them waiting past their communicator's threshold
  rules      the rules' xtimer:job_hang_culprit, xtimer:job_first_failure as exited (Prometheus)
  dump       the automatic dump's hang summaries: their verdicts' (kind, culprit)

and requires: before any surface shows the hang, none shows a culprit or a waiting rank; the
daemon's surfaces (metric, gauges, status, hangcheck) agree from the second after the first of
them shows it (a pass may fall between two reads), the rules within 5 s (a scrape, then an
evaluation of their group, every 5 s), judged only once they were evaluated after Prometheus
held a scrape of both daemons taken since (a loaded machine fails scrapes and appends them
seconds late), on at least 10 samples taken for up to 60 s more, the dump
within 10 s; after that every sample agrees, for 20 s, with nothing
retracted: the culprits {(never_issued, 5)}; the waiting ranks of the gauges, Status and
HangCheck's progress are one set, which holds every verdict's waiting ranks (the others wait
downstream, e.g. a pipeline stage whose senders are themselves waiting). And the stacks
(issue 21): within the verdict time plus 5 s both daemons have written every local rank's
.stacks file into their hang folder, and `xtimer stacks` over both folders names rank 5 alone as
the outlier, in the function it stopped in (StopInHostCode, called by DpAllReduce), and every other
rank's group waits in the (simulated) NCCL/CUDA runtime: a frame of libnccl*/libcuda* (or named
nccl*/cuda*) inside the job's innermost frame.

Usage: hang_agreement_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER
       DIAG_JOB RULES [SCENARIO]
"""

import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from diag_cluster import Cluster, run  # noqa: E402
from e2e_lib import (Paths, fail, log, parse, prometheus_query, scrape, select,  # noqa: E402
                     status)

JOB = "agree"
# Per scenario: the job's fault flags, the line the faulty rank prints, the culprits every
# surface must name, whether the waiting ranks must be some from the start (a hang is its
# waiters; an exit is evidence by itself), whether the culprit itself waits, whether the
# stacks are checked.
SCENARIOS = {
    "hang": (["--stop-before-dp-allreduce", "5:40"], r"rank 5 stops in host code",
             {("never_issued", "5")}, True, False, True),
    "crash": (["--crash", "5:40:segv"], r"rank 5 raises SIGSEGV",
              {("exited", "5")}, False, False, False),
    "mismatch": (["--mismatch-dtype", "5:40"], r"rank 5 passes ncclInt32",
                 {("mismatch", "5")}, True, True, False),
}
FLAGS, FAULT_LINE, WANT, WAITERS_FIRST, CULPRIT_WAITS, STACKS = SCENARIOS["hang"]
HANG_TIMEOUT_S = 20
DAEMON_LAG = 1    # samples the daemon's own surfaces may trail the first one
RULES_LAG = 5     # seconds: a scrape (1 s) and an evaluation of the hang rules (every 5 s)
SCRAPE_AFTER_S = 1  # seconds: a scrape this long after the hang showed holds every daemon's view
RULES_JUDGED = 10  # samples in which the rules must be judged (a loaded machine may fail scrapes)
DUMP_LAG = 10     # seconds: the dump is written after the verdict
HOLD_S = 20       # seconds every surface must keep agreeing
DEADLINE_S = 60   # the verdict must come within this of the fault


def metric_view(cluster):
    culprits, waiting = set(), set()
    for port in cluster.metrics:
        samples = parse(scrape(port))
        for labels, v in select(samples, "xtimer_hang_culprit", job=JOB):
            if v == 1:
                culprits.add((labels.get("kind"), labels.get("rank")))
        for labels, v in select(samples, "xtimer_rank_waiting_hang", job=JOB):
            if v == 1:
                waiting.add(int(labels["rank"]))
    return culprits, waiting


def status_waiting(cluster):
    out = set()
    for port in cluster.controls:
        for p in status(port)["processes"]:
            if p.get("job") == JOB and p.get("hang"):
                out.add(int(p["rank"]))
    return out


def culprits_of(verdicts):
    """{(kind, rank)} of the verdicts that blame a rank (a node that sees only victims says
    waiting_on_remote and blames none: the culprit's node names it)."""
    return {(v.get("kind"), str(r)) for v in verdicts for r in v.get("culprit_ranks", [])}


def waits_past_threshold(rank):
    """Whether a HangCheck rank's progress shows it waiting past its communicator's threshold."""
    return any(float(c.get("oldest_inflight_age_s", 0)) > float(c.get("hang_threshold_s", 1e18))
               for c in rank.get("comms", []))


def hangcheck_view(cluster):
    answers = cluster.hang_checks(JOB)
    verdicts = [v for a in answers for v in a.get("verdicts", [])]
    in_verdicts = {int(r) for v in verdicts for r in v.get("waiting_ranks", [])}
    progress = {int(r["rank"]) for a in answers for r in a.get("ranks", [])
                if r.get("job") == JOB and waits_past_threshold(r)}
    return culprits_of(verdicts), in_verdicts, progress, sorted({v.get("kind") for v in verdicts})


def dump_view(cluster):
    culprits = set()
    for root in cluster.roots:
        for path in glob.glob(os.path.join(root, "hang-*", JOB, "hang-summary-*.json")):
            try:
                with open(path) as f:
                    summary = json.load(f)
            except (OSError, ValueError):
                continue  # being written
            culprits |= culprits_of(summary.get("verdicts", []))
    return culprits


def rules_view(cluster):
    """The rules' culprits: xtimer:job_hang_culprit's, and the job's first failure as (exited,
    rank) (the rules' answer to a crash before any peer waits past its threshold)."""
    first = {("exited", labels.get("rank")) for labels, _ in prometheus_query(
        cluster.prom_port, 'xtimer:job_first_failure{job="%s"}' % JOB)}
    return cluster.rule_culprits(JOB) | first


def scraped_at(cluster):
    """Unix time of the oldest of Prometheus' last successful scrapes of the daemons (the
    sample time of a series each daemon always exports), or None while one's last scrape failed
    (its series are then stale): the rules cannot know what Prometheus could not read."""
    times = [v for _, v in prometheus_query(
        cluster.prom_port, "timestamp(xtimer_daemon_start_time_seconds)")]
    return min(times) if len(times) == len(cluster.roots) else None


def rules_evaluated_at(cluster):
    """Unix time of the hang rules' last evaluation (the sample time of a series their group
    records for every communicator), or None before the first."""
    times = [v for _, v in prometheus_query(
        cluster.prom_port, 'max(timestamp(xtimer:comm_hang_threshold_max_seconds{job="%s"}))' %
        JOB)]
    return times[0] if times else None


def sample(cluster):
    scraped = scraped_at(cluster)
    seen_wall = time.time()  # Prometheus held that scrape by now
    metric, gauges = metric_view(cluster)
    hangcheck, in_verdicts, progress, kinds = hangcheck_view(cluster)
    evaluated = rules_evaluated_at(cluster)  # before the rules' view: never newer than it
    return {"metric": metric, "gauges": gauges, "status": status_waiting(cluster),
            "hangcheck": hangcheck, "hc_waiting": progress, "hc_verdict_waiting": in_verdicts,
            "kinds": kinds,
            "rules": rules_view(cluster), "dump": dump_view(cluster),
            "stacks": stacks_files(cluster), "scraped": scraped, "seen_wall": seen_wall,
            "evaluated": evaluated}


def daemon_views_agree(s):
    return s["metric"] == s["hangcheck"] and s["gauges"] == s["status"] == s["hc_waiting"]


def show(s):
    return " ".join("%s=%s" % (k, sorted(v)) for k, v in sorted(s.items())
                    if k not in ("stacks", "scraped", "seen_wall", "evaluated"))


def rules_known_since(samples, first_wall):
    """The wall time at which the test first saw Prometheus hold a scrape of every daemon taken
    after the hang showed (SCRAPE_AFTER_S later), or None. Not the scrape's own time: a loaded
    Prometheus appends a scrape seconds after taking it (scrape_duration_seconds up to 17 s)."""
    for _, s in samples:
        if s["scraped"] is not None and s["scraped"] >= first_wall + SCRAPE_AFTER_S:
            return s["seen_wall"]
    return None


def rules_can_know(s, since):
    """Whether the rules were evaluated after Prometheus held a scrape of both daemons since the
    hang (rules_known_since), with both daemons' last scrapes good: only then can the rules be
    held to it."""
    return (since is not None and s["scraped"] is not None and s["evaluated"] is not None and
            s["evaluated"] >= since)


def rules_judged(samples, first, first_wall):
    """The samples in which the rules are held to the verdict: RULES_LAG after the first surface
    showed the hang, and evaluated on what Prometheus could read of it (rules_can_know)."""
    since = rules_known_since(samples, first_wall)
    return sum(1 for t, s in samples if t - first >= RULES_LAG and rules_can_know(s, since))


def shows_hang(s, keys):
    return any(s[k] for k in keys) or bool(s["kinds"])


def check(samples, first, first_wall):
    """Fails unless the samples (time since the fault, views) agree as the docstring says."""
    daemon = ("metric", "gauges", "status", "hangcheck", "hc_waiting", "hc_verdict_waiting")
    waited = False
    since = rules_known_since(samples, first_wall)
    judged = rules_judged(samples, first, first_wall)
    if judged < RULES_JUDGED:
        fail("Prometheus scraped both daemons after the hang in only %d samples (of %d; want %d): "
             "the rules cannot be judged" % (judged, len(samples), RULES_JUDGED))
    for t, s in samples:
        if t < first - 1e-9 and shows_hang(s, daemon + ("rules", "dump")):
            fail("at %.1f s, before the first surface showed the hang (%.1f s), one did: %s" %
                 (t, first, show(s)))
        late = t - first
        if late < 0:
            continue
        if late >= DAEMON_LAG:
            if s["metric"] != WANT or s["hangcheck"] != WANT:
                fail("at %.1f s the verdicts disagree: %s" % (t, show(s)))
            if not s["gauges"] == s["status"] == s["hc_waiting"]:
                fail("at %.1f s the waiting ranks disagree: %s" % (t, show(s)))
            if WAITERS_FIRST and not (s["gauges"] and s["hc_verdict_waiting"]):
                fail("at %.1f s a verdict without waiting ranks: %s" % (t, show(s)))
            # A verdict's waiting ranks wait in its instance; the others wait downstream of it.
            if not s["hc_verdict_waiting"] <= s["gauges"]:
                fail("at %.1f s a verdict's waiting ranks are not waiting: %s" % (t, show(s)))
            if not CULPRIT_WAITS and any(int(r) in s["gauges"] for _, r in WANT):
                fail("at %.1f s the culprit counts as waiting: %s" % (t, show(s)))
            if waited and not s["gauges"]:
                fail("at %.1f s the waiting ranks are retracted: %s" % (t, show(s)))
            waited = waited or bool(s["gauges"])
        if late >= RULES_LAG and rules_can_know(s, since) and s["rules"] != WANT:
            fail("at %.1f s the rules disagree: %s" % (t, show(s)))
        if late >= DUMP_LAG and s["dump"] != WANT:
            fail("at %.1f s the automatic dump disagrees: %s" % (t, show(s)))
    if not waited:
        fail("no rank ever waited past its threshold: %s" % show(samples[-1][1]))


def stacks_files(cluster):
    return sorted(glob.glob(os.path.join(cluster.roots[0], "hang-*", JOB, "*.stacks")) +
                  glob.glob(os.path.join(cluster.roots[1], "hang-*", JOB, "*.stacks")))


def nccl_or_cuda(frame):
    """Whether a frame is NCCL or CUDA, as xtimer stacks colours them (stacktrace/merge.cc,
    OriginOf): module libnccl* / libcuda* (the simulator's libraries have the real sonames,
    libnccl.so.2 and libcudart.so.13) or function nccl* / cuda*."""
    module = os.path.basename(frame.get("module", ""))
    function = frame.get("function", "")
    return frame.get("kind") == "native" and (module.startswith(("libnccl", "libcuda")) or
                                              function.startswith(("nccl", "cuda")))


def waits_in_runtime(frames, job_module):
    """Whether a stack (innermost first) waits in NCCL/CUDA: a NCCL/CUDA frame comes before the
    innermost frame of the job's own binary (`job_module`, a base name). A stack stopped in a
    function of the job's (StopInHostCode, a sleep) or anywhere else outside the runtime fails,
    whatever NCCL/CUDA calls lie further out."""
    for f in frames:
        if os.path.basename(f.get("module", "")) == job_module:
            return False
        if nccl_or_cuda(f):
            return True
    return False


def check_stacks(cluster, xtimer, job_module, samples, first, tmp):
    """Issue 21: within the verdict time plus 5 s both daemons wrote every local rank's stacks
    into their hang folder; `xtimer stacks` over both names rank 5 alone, in the function it
    stopped in, and every other rank waiting in the simulated NCCL/CUDA runtime."""
    verdict = min(t for t, s in samples if s["metric"] == WANT)
    when = [t for t, s in samples if len(s["stacks"]) == 8]
    if not when or when[0] > verdict + 5:
        fail("8 .stacks files in the hang folders %s s after the fault; the verdict came at "
             "%.1f s: %s" % (when[0] if when else "never", verdict, stacks_files(cluster)))
    dirs = sorted({os.path.dirname(f) for f in stacks_files(cluster)})
    out = os.path.join(tmp, "stacks-out")
    rc, text, err = run([xtimer, "stacks"] + dirs + ["-o", out, "--json"])
    if rc != 0:
        fail("xtimer stacks %s exited %d:\n%s%s" % (dirs, rc, text, err))
    groups = json.loads(text)["groups"]
    outliers = [g for g in groups if g.get("outlier")]
    if len(outliers) != 1 or outliers[0]["ranks"] != [5]:
        fail("xtimer stacks: outlier groups %s, want rank 5 alone:\n%s" % (outliers, text))
    names = [f["function"] for f in outliers[0]["frames"]]
    for want in ("StopInHostCode", "DpAllReduce"):
        if not any(want in n for n in names):
            fail("rank 5's stack does not name %s: %s" % (want, names))
    if waits_in_runtime(outliers[0]["frames"], job_module):
        fail("rank 5's stack counts as waiting in NCCL/CUDA: %s" % outliers[0]["frames"])
    others = sorted(r for g in groups if not g.get("outlier") for r in g["ranks"])
    if others != [0, 1, 2, 3, 4, 6, 7]:
        fail("the other ranks' groups: %s" % groups)
    for g in groups:
        if not g.get("outlier") and not waits_in_runtime(g["frames"], job_module):
            fail("ranks %s do not wait in NCCL/CUDA (no libnccl/libcuda or nccl*/cuda* frame "
                 "inside their innermost %s frame): %s" % (g["ranks"], job_module, [
                     (f["function"], f["module"]) for f in g["frames"]]))
    log("stacks: 8 files %.1f s after the fault (verdict at %.1f s); xtimer stacks names rank 5 "
        "alone in %s; the others: %s" % (when[0], verdict, names[:3], [
            (g["ranks"], [f["function"] for f in g["frames"]][:3]) for g in groups
            if not g.get("outlier")]))


def main(argv):
    global FLAGS, FAULT_LINE, WANT, WAITERS_FIRST, CULPRIT_WAITS, STACKS
    if len(argv) not in (10, 11) or (len(argv) == 11 and argv[10] not in SCENARIOS):
        fail(__doc__)
    scenario = argv[10] if len(argv) == 11 else "hang"
    FLAGS, FAULT_LINE, WANT, WAITERS_FIRST, CULPRIT_WAITS, STACKS = SCENARIOS[scenario]
    xtimer, diag_job, rules = [os.path.abspath(a) for a in argv[7:10]]
    p = Paths(argv[:7], __doc__)
    cluster = Cluster(p, xtimer, diag_job, rules, hang_timeout=HANG_TIMEOUT_S)
    nodes = []
    try:
        nodes = cluster.start_job(JOB, FLAGS, 100000)
        cluster.wait_running(nodes, JOB)
        nodes[1].wait_for_line(FAULT_LINE, 120)
        t0 = time.monotonic()
        samples, first, first_wall = [], None, None
        while True:
            tick, tick_wall = time.monotonic(), time.time()
            s = sample(cluster)
            # The surfaces are read one after another: a diagnosis pass (one a second per node)
            # that falls between two reads makes them differ once; read them again (twice at
            # most) before judging. A disagreement that stays is still one.
            for _ in range(2):
                if daemon_views_agree(s):
                    break
                s = sample(cluster)
            t = tick - t0
            samples.append((t, s))
            daemon_shows = shows_hang(s, ("metric", "gauges", "status", "hangcheck"))
            if first is None and (daemon_shows or s["rules"] or s["dump"]):
                first, first_wall = t, tick_wall
                log("%.1f s after the fault, the first surface shows the hang: %s" % (t, show(s)))
            if first is None and t > DEADLINE_S:
                fail("no surface showed the hang within %d s of the fault" % DEADLINE_S)
            # Long enough for every surface, and for the rules in as many samples as Prometheus
            # needs (a loaded machine may fail scrapes for a while): at most DEADLINE_S more.
            if first is not None and t > first + DUMP_LAG + HOLD_S and (
                    rules_judged(samples, first, first_wall) >= RULES_JUDGED or
                    t > first + DEADLINE_S + HOLD_S):
                break
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        check(samples, first, first_wall)
        if STACKS:
            check_stacks(cluster, xtimer, os.path.basename(diag_job), samples, first, p.tmp)
        log("%s: %d samples over %.0f s (%d with a daemon's last scrape failed): metric, gauges, "
            "Status and HangCheck agreed from %.1f s, the rules from %.1f s, the dump from %.1f s; "
            "last: %s" % (
                scenario, len(samples), samples[-1][0],
                sum(1 for _, v in samples if v["scraped"] is None), first,
                min(t for t, s in samples if s["rules"] == WANT),
                min(t for t, s in samples if s["dump"] == WANT), show(samples[-1][1])))
    finally:
        for n in nodes:
            n.kill()
        cluster.stop()
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

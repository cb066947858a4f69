#!/usr/bin/env python3
"""Prints the end of the demo (demo/run_xtimer_demo.sh): what each node's xtimerd reports per
rank, then "what xtimer found". Everything it says comes from what xtimer wrote into DIR: the
daemons' /metrics (metrics-nodeN.txt, read during the run; metrics-end-nodeN.txt, after it),
`xtimer analyze --hosts --json` during the run (live.json), `xtimer analyze --json` of the dump
(analysis.json), `xtimer stacks --json` (stacks.json, stacks/summary.txt) for a hang, and the
trace and report files. It knows nothing of the injected fault. Standard library only.

Usage: demo_findings.py --dir DIR --groups LAYOUT --job J --metrics-ports A,B
                        --control-ports A,B --job-seconds S --xtimer PATH [--keep 0|1]
"""

import argparse
import json
import os
import re
import sys
import textwrap

ORDER = ["tp", "cp", "ep", "dp", "pp"]  # Megatron's rank order, tp varying fastest
CAUSES = {
    "host": "its GPU sat idle before its collectives, waiting for its own host (data loading, "
            "CPU work), while its peers' GPUs were busy",
    "compute": "its GPU work (GEMMs, kernels) before each collective takes longer than its peers'",
    "link": "the communicator's transfers are slower than those of its twins (same size, op and "
            "bytes): a slow link, not a slow rank",
}
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def say(text, indent=2, more=None):
    """Prints text wrapped at 100 columns, indented; continuation lines 2 more."""
    more = indent + 2 if more is None else more
    print(textwrap.fill(text, 100, initial_indent=" " * indent, subsequent_indent=" " * more,
                        break_on_hyphens=False, break_long_words=False))


def parse_metrics(path):
    """[(name, labels, value)] of a Prometheus text exposition; [] when the file is missing."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            m = SAMPLE.match(line.strip())
            if m and not line.startswith("#"):
                out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def per_rank(samples, name, reduce=sum):
    """{rank: reduce(values)} of metric `name` over its series."""
    values = {}
    for n, labels, v in samples:
        if n == name and "rank" in labels:
            values.setdefault(int(labels["rank"]), []).append(v)
    return {r: reduce(vs) for r, vs in values.items()}


def layout(groups):
    """{dim: size} of a layout such as tp2-pp2-dp2."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"([a-z]+)(\d+)", groups)}


def coords(rank, sizes):
    parts, rest = [], rank
    for dim in ORDER:
        size = sizes.get(dim, 1)
        if size > 1 or dim in ("tp", "dp", "pp"):
            parts.append("%s %d" % ("stage" if dim == "pp" else dim, rest % size))
        rest //= size
    return ", ".join(parts)


def ranks_text(ranks):
    ranks = sorted(ranks)
    if not ranks:
        return "none"
    words = [str(r) for r in ranks]
    return ("rank " if len(ranks) == 1 else "ranks ") + (
        words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def load_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return None


def node_sections(a, sizes, nodes):
    """One heading per node, its ranks in order, from the scrape made during the run."""
    print()
    print("== what each node's xtimerd reports (curl 127.0.0.1:PORT/metrics, read during the run)")
    print("   GEMMs: the rank's matmul rate (xtimer_matmul_flop_per_second, the largest series);")
    print("   bus bandwidth: bus bytes / the rank's own time in collectives, waiting included")
    print("   (xtimer_collective_bus_bytes_total / xtimer_collective_time_seconds_total);")
    print("   waited: its time in collectives before the last member arrived, on communicators")
    print("   within its node: a daemon sees its own node's ranks (xtimer_collective_wait_seconds_total)")
    for i, samples in enumerate(nodes):
        up = per_rank(samples, "xtimer_rank_up", max)
        flops = per_rank(samples, "xtimer_matmul_flop_per_second", max)
        bus = per_rank(samples, "xtimer_collective_bus_bytes_total")
        secs = per_rank(samples, "xtimer_collective_time_seconds_total")
        wait = per_rank(samples, "xtimer_collective_wait_seconds_total")
        hung = per_rank(samples, "xtimer_rank_waiting_hang", max)
        print()
        print("node %d (metrics 127.0.0.1:%s, control :%s): %s" % (
            i, a.metrics_ports[i], a.control_ports[i], ranks_text(up) if up else "no rank"))
        for r in sorted(up):
            state = "running" if up[r] else "exited"
            if hung.get(r):
                state += ", waiting in a hang"
            bw = bus.get(r, 0) / secs[r] / 1e9 if secs.get(r) else 0
            print("  rank %d (%s): %-7s GEMMs %6.1f TFLOPS, bus bandwidth %6.2f GB/s, waited %6.2f s"
                  % (r, coords(r, sizes), state + ";", flops.get(r, 0) / 1e12, bw, wait.get(r, 0)))


def comm_members(report):
    members = {}
    for row in report.get("true_bus_bandwidth", []):
        members.setdefault(row["comm"], set()).add(row["rank"])
    return members


def where(rank, sizes, rank_node):
    return "node %s, %s" % (rank_node.get(rank, "?"), coords(rank, sizes))


def print_hangs(report, sizes, rank_node):
    hangs = report.get("hangs") or ([report["hang"]] if report.get("hang") else [])
    head = hangs[0]
    culprits = sorted({r for h in hangs for r in h.get("culprit_ranks", [])})
    waiting = sorted({r for h in hangs for r in h.get("waiting_ranks", [])} - set(culprits))
    say("Hang (%s): culprit %s (%s); %s wait for it in collectives of its communicators, "
        "the other ranks behind them." % (
        head["kind"], ranks_text(culprits),
        "; ".join(where(r, sizes, rank_node) for r in culprits), ranks_text(waiting)))
    say("xtimer's first verdict: %s %s seq %s on communicator %s%s, stalled %.1f s "
          "(threshold %.1f s); %d verdict(s) in all" % (
              "point-to-point" if head.get("point_to_point") else "collective",
              head.get("op"), head.get("seq"), head.get("comm"),
              " (%s)" % head["group"] if head.get("group") else "", head.get("stalled_s") or 0,
              head.get("threshold_s") or 0, len(hangs)), 4)
    for e in head.get("evidence", [])[:4]:
        say("- " + e, 4, 6)


def print_stragglers(report, sizes, rank_node):
    members = comm_members(report)
    for s in report.get("stragglers", [])[:3]:
        group = " (%s)" % s["group"] if s.get("group") else ""
        if s.get("rank") is None:
            say("Slow link: communicator %s%s, %s; cause link: %s. It cost %.2f rank-s." % (
                s["comm"], group, ranks_text(members.get(s["comm"], [])), CAUSES["link"],
                s["wait_caused_s"]))
        else:
            r = s["rank"]
            say("Straggler: rank %d (%s), cause %s: %s. It made its peers on communicator %s%s "
                  "wait %.2f s in all." % (r, where(r, sizes, rank_node), s["cause"],
                                             CAUSES.get(s["cause"], s["cause"]), s["comm"], group,
                                             s["wait_caused_s"]))
        for e in s.get("evidence", [])[:3]:
            say("- " + e, 4, 6)


def verdict_words(report):
    """A short comparable form of a report's verdicts, for the live-versus-dump line."""
    if report is None:
        return None
    words = ["hang %s of %s" % (h["kind"], ranks_text(h.get("culprit_ranks", [])))
             for h in (report.get("hangs") or [])[:1]]
    for s in report.get("stragglers", [])[:1]:
        words.append("straggler %s, cause %s" % (
            "rank %d" % s["rank"] if s.get("rank") is not None else "communicator " + s["comm"],
            s["cause"]))
    return "; ".join(words) or "no problem"


def print_verdicts(a, report, live, sizes, rank_node):
    hangs = report.get("hangs") or report.get("hang")
    if hangs:
        print_hangs(report, sizes, rank_node)
    if report.get("stragglers"):
        print_stragglers(report, sizes, rank_node)
    if not hangs and not report.get("stragglers"):
        say("No problem found: no hang, no straggler, no slow link over %d complete "
              "collective instances." % report.get("instances", 0))
    if report.get("bounding_stage") is not None:
        say("The pipeline stage that bounds the step: %d." % report["bounding_stage"])
    if live is not None:
        say("Live, from the daemons (xtimer analyze --hosts %s): %s." % (
            ",".join("127.0.0.1:" + p for p in a.control_ports), verdict_words(live)))


def print_bandwidth(report, nodes):
    rows = report.get("true_bus_bandwidth", [])
    if not rows:
        return
    obs = [r["observed_bytes_per_second"] / 1e9 for r in rows]
    true = [r["true_bytes_per_second"] / 1e9 for r in rows]
    say("Bus bandwidth: true (bus bytes / the transfer time after the last member arrived) %.2f "
        "to %.2f GB/s; observed (bus bytes / the rank's own time in the collective, waiting "
        "included) %.2f to %.2f GB/s, per rank and communicator (xtimer analyze's table)." % (
            min(true), max(true), min(obs), max(obs)))
    links = [s for s in report.get("stragglers", []) if s.get("rank") is None]
    if links:
        slow = min(rows, key=lambda r: r["true_bytes_per_second"])
        say("The lowest true bus bandwidth, %.2f GB/s, is communicator %s's: the slow link." % (
            slow["true_bytes_per_second"] / 1e9, slow["comm"]), 4)
    late = [s["rank"] for s in report.get("stragglers", []) if s.get("rank") is not None]
    if not late:
        return
    bus, secs = {}, {}
    for samples in nodes:
        bus.update(per_rank(samples, "xtimer_collective_bus_bytes_total"))
        secs.update(per_rank(samples, "xtimer_collective_time_seconds_total"))
    per = {r: bus[r] / secs[r] / 1e9 for r in bus if secs.get(r)}
    if late[0] not in per:
        return
    others = sorted(r for r in per if per[r] < 0.5 * per[late[0]])
    if others:
        say("Read naively, the per-rank figures above (rank %d: %.2f GB/s; %s: %.2f to %.2f GB/s) "
            "blame %s for slow links. They are not slow: they wait inside their collectives for "
            "rank %d, and the true bus bandwidth shows the links are fine." % (
                late[0], per[late[0]], ranks_text(others), min(per[r] for r in others),
                max(per[r] for r in others), ranks_text(others), late[0]), 4)


def print_cost(a, nodes_end):
    spent, budget = {}, {}
    for samples in nodes_end:
        spent.update(per_rank(samples, "xtimer_hook_overhead_seconds_total"))
        budget.update(per_rank(samples, "xtimer_hook_overhead_budget_ratio", max))
    if not spent or a.job_seconds <= 0:
        say("What xtimer cost: the daemons reported no hook overhead.")
        return
    top = max(spent, key=spent.get)
    say("What xtimer cost: the hook's own time on a rank's application threads was %.3f to "
          "%.3f s (the most: rank %d) over the %d s the job ran, at most %.2f%% (budget %.0f%%, "
          "XTIMER_OVERHEAD_BUDGET); xtimer_hook_overhead_seconds_total, and per process the "
          "report's \"What xtimer cost\"." % (
              min(spent.values()), spent[top], top, a.job_seconds,
              100 * spent[top] / a.job_seconds, 100 * budget.get(top, 0.01)))


def print_stacks(d):
    summary = os.path.join(d, "stacks", "summary.txt")
    if not os.path.exists(summary):
        return
    say("Where every rank is stuck (xtimer stacks: the ranks' main-thread stacks merged, "
          "grouped by identical stack):")
    with open(summary) as f:
        for line in f.read().splitlines()[:8]:
            print("    " + line)
    print("    flame graph (open in a browser): %s" % os.path.join(d, "stacks", "stacks.svg"))


def print_files(a):
    d, x = a.dir, a.xtimer
    hosts = ",".join("127.0.0.1:" + p for p in a.control_ports)
    print("  Look at it:")
    print("    trace    %s  (open it in https://ui.perfetto.dev: Open trace file)" %
          os.path.join(d, "trace.pftrace"))
    print("    report   %s  (open it in a browser)" % os.path.join(d, "report.html"))
    print("    dump     %s  (one .timeline file per rank)" % d)
    up = "" if a.keep else "   (the daemons are stopped now: run with --keep)"
    print("    metrics  curl -s 127.0.0.1:%s/metrics | grep -E '^xtimer_(collective_wait_seconds"
          "|bus_bandwidth_(observed|true))'%s" % (a.metrics_ports[0], up))
    print("    %s analyze %s --groups %s" % (x, d, a.groups))
    print("    %s analyze --hosts %s --job %s --groups %s%s" % (x, hosts, a.job, a.groups, up))
    print("    %s timeline %s -o trace.pftrace; %s report %s -o report.html" % (x, d, x, d))
    if os.path.exists(os.path.join(d, "stacks")):
        print("    %s stacks %s -o stacks/" % (x, d))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--groups", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--metrics-ports", required=True)
    p.add_argument("--control-ports", required=True)
    p.add_argument("--job-seconds", type=float, required=True)
    p.add_argument("--xtimer", required=True)
    p.add_argument("--keep", type=int, default=0)
    a = p.parse_args()
    a.metrics_ports = a.metrics_ports.split(",")
    a.control_ports = a.control_ports.split(",")
    sizes = layout(a.groups)
    nodes = [parse_metrics(os.path.join(a.dir, "metrics-node%d.txt" % i)) for i in (0, 1)]
    nodes_end = [parse_metrics(os.path.join(a.dir, "metrics-end-node%d.txt" % i)) for i in (0, 1)]
    rank_node = {r: i for i, s in enumerate(nodes) for r in per_rank(s, "xtimer_rank_up")}
    report = load_json(os.path.join(a.dir, "analysis.json"))
    if report is None:
        sys.exit("demo_findings.py: no analysis in %s" % a.dir)
    node_sections(a, sizes, nodes)
    print()
    print("== what xtimer found (xtimer analyze of the dump, %s)" % a.dir)
    print_verdicts(a, report, load_json(os.path.join(a.dir, "live.json")), sizes, rank_node)
    print_stacks(a.dir)
    print_bandwidth(report, nodes)
    print_cost(a, [e or n for e, n in zip(nodes_end, nodes)])
    print_files(a)


if __name__ == "__main__":
    main()

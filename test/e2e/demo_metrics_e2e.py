#!/usr/bin/env python3
"""The demo job (8 ranks, 2 emulated nodes, tp2-pp2-dp2) under xtimer-launch on the GPU simulator.

Each emulated node runs its own launcher under its own xtimer-launch, so each gets its own xtimerd
(own run directory and ports), exactly as two machines would. While the ranks linger after their
last step, the test scrapes both daemons and checks:
  - every rank is up on its node's daemon, with no dropped records;
  - matmul FLOP/s within 5% of the simulator's configured bf16 rate;
  - collective and p2p bus bandwidth within 5% of the configured intra-/inter-node bandwidth;
  - each communicator's sequence numbers agree across its ranks, nothing left in flight;
  - `promtool check metrics` is clean on both expositions;
  - a real Prometheus server scrapes both daemons and sees all 8 ranks.

Bus bandwidth: a rank that reaches a collective before its peers also measures its wait, as on
real GPUs, so a rank's average mixes in waiting. The rank that arrived last measures the transfer
alone; the test therefore compares the best bandwidth any member of a group saw (the gauge scaled
by avg/min latency, i.e. the bandwidth of the rank's fastest instance) with the configured figure.
The simulator's per-operation latency is set to 0 so that every message size can be compared.

Usage: demo_metrics_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, start_prometheus, stop_daemon, wait_for)

# The configured bf16 rate: low enough that the simulated GPU, not the host, is the bottleneck, as
# in real training. (Here one CPU also plays every rank's host and moves all collective data, so a
# step takes ~100 ms of host time.) On a GPU that waits for its host, an op's events measure the
# host's launch gap too, on real GPUs as on the simulator, and the rate would not be the model's.
TFLOPS_BF16 = 0.1
INTRA_GBPS = 150.0    # XTIMER_SIM_INTRA_BW_GBPS default
INTER_GBPS = 25.0     # XTIMER_SIM_INTER_BW_GBPS default
TOLERANCE = 0.05

# tp2-pp2-dp2 in Megatron order (tp fastest, then dp, then pp): see docs/demo.md.
TP_GROUPS = [[0, 1], [2, 3], [4, 5], [6, 7]]
DP_GROUPS = [[0, 2], [1, 3], [4, 6], [5, 7]]
PP_GROUPS = [[0, 4], [1, 5], [2, 6], [3, 7]]


def main(argv):
    p = Paths(argv, __doc__)
    tmp = p.tmp
    run_dirs = [p.run_dir("node%d" % i) for i in range(2)]
    rdzv = os.path.join(tmp, "rdzv")
    m0, m1, c0, c1, prom_port = free_ports(5)
    metrics_ports = [m0, m1]
    env = dict(os.environ)
    env.update({"XTIMER_SIM_INTRA_LAT_US": "0", "XTIMER_SIM_INTER_LAT_US": "0",
                "XTIMER_SIM_TFLOPS_BF16": str(TFLOPS_BF16)})
    nodes = []
    prom = start_prometheus(prom_port, metrics_ports, tmp)
    try:
        for i in range(2):
            argv_i = p.launch_argv(run_dirs[i], metrics_ports[i], [c0, c1][i], "e2e-demo") + [
                      sys.executable, p.demo_launch, "--nnodes", "2", "--nproc-per-node", "4",
                      "--node-rank", str(i), "--rdzv-dir", rdzv, "--timeout", "240", "--",
                      p.gpusim_run, p.train_step, "--tp", "2", "--pp", "2", "--steps", "6",
                      "--hidden", "512", "--seq", "512", "--linger", "10"]
            nodes.append(Background("node%d" % i, argv_i, env, tmp))
        log("8 ranks started on 2 emulated nodes; waiting for the last step")
        nodes[0].wait_for_line(r"lingering", 240)
        time.sleep(1.5)  # the pollers' last records and the daemons' read cycle
        texts = [scrape(p) for p in metrics_ports]
        prom_text = query_prometheus(prom, prom_port)
        for i, node in enumerate(nodes):
            status = node.wait(120)
            if status != 0:
                fail("node %d's job exited %d:\n%s" % (i, status, node.output()))
        log("both nodes' jobs exited 0")
        check_clean_ends(metrics_ports)
        for i, text in enumerate(texts):
            with open(os.path.join(tmp, "metrics%d.txt" % i), "w") as f:
                f.write(text)
            promtool(text, i)
        check_metrics([parse(t) for t in texts])
        log(prom_text)
    finally:
        prom.kill()
        for node in nodes:
            node.kill()
        for d in run_dirs:
            stop_daemon(d)
        p.cleanup()
    print("PASS")


def clean_ends(port, ranks):
    """True when every rank of `ranks` is exited on the daemon at `port` with cause "exit" and
    status 0 (the hook's marker read at the job's end), and the daemon holds no hang verdict."""
    samples = parse(scrape(port))
    ends = {labels["rank"]: (labels.get("cause"), v)
            for labels, v in select(samples, "xtimer_rank_exit_code", job="e2e-demo")}
    if select(samples, "xtimer_hang_verdict"):
        fail("a hang verdict after a clean end: %s" % select(samples, "xtimer_hang_verdict"))
    return sorted(ends) == sorted(str(r) for r in ranks) and all(
        end == ("exit", 0) for end in ends.values())


def check_clean_ends(metrics_ports):
    """A job that ends cleanly is read as one: each rank's exit marker says exit 0, so no rank
    is taken for lost and no exited verdict is called (a marker missed would be both)."""
    for node, port in enumerate(metrics_ports):
        wait_for("node %d: every rank exited with cause exit, status 0" % node,
                 lambda: clean_ends(port, range(4 * node, 4 * node + 4)), 30)
    log("every rank's end read as exit 0 on its daemon; no hang verdict")


def promtool(text, node):
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True)
    if p.returncode != 0:
        fail("promtool check metrics on node %d: exit %d\n%s" %
             (node, p.returncode, (p.stdout + p.stderr).decode()))
    log("promtool check metrics: node %d clean" % node)


def check_metrics(per_node):
    everything = per_node[0] + per_node[1]
    # Ranks are up on their own node's daemon.
    for node, samples in enumerate(per_node):
        ranks = sorted(int(l["rank"]) for l, v in select(samples, "xtimer_rank_up") if v == 1)
        want = list(range(4 * node, 4 * node + 4))
        if ranks != want:
            fail("node %d: ranks up %s, expected %s" % (node, ranks, want))
    log("ranks 0-3 up on node 0's daemon, 4-7 on node 1's")
    for labels, v in select(everything, "xtimer_ring_records_dropped_total"):
        if v != 0:
            fail("rank %s dropped %d records" % (labels["rank"], v))
    written = sum(v for _, v in select(everything, "xtimer_ring_records_written_total"))
    log("zero drops (%d records written)" % written)

    # Matmul rate on every rank.
    worst = 0.0
    for rank in range(8):
        rates = select(everything, "xtimer_matmul_flop_per_second", rank=str(rank), dtype="bf16")
        if not rates:
            fail("rank %d has no bf16 matmul rate" % rank)
        for labels, v in rates:
            tflops = v / 1e12
            worst = max(worst, abs(tflops - TFLOPS_BF16) / TFLOPS_BF16)
            if abs(tflops - TFLOPS_BF16) > TOLERANCE * TFLOPS_BF16:
                fail("rank %d %s %s: %.1f TFLOPS, configured %.0f" %
                     (rank, labels["operation"], labels["size_class"], tflops, TFLOPS_BF16))
    log("matmul: every rank's bf16 rate within 5%% of %g TFLOPS (largest deviation %.2f%%)" %
        (TFLOPS_BF16, 100 * worst))

    # Bus bandwidth per group and operation.
    def best_busbw(rank, operation):
        out = {}
        for labels, bw in select(everything, "xtimer_collective_bus_bandwidth_bytes_per_second",
                                 rank=str(rank), operation=operation):
            key = {k: labels[k] for k in ("kind", "operation", "dtype", "size_class")}
            avg = select(everything, "xtimer_op_latency_avg_seconds", rank=str(rank), **key)
            mn = select(everything, "xtimer_op_latency_min_seconds", rank=str(rank), **key)
            if not avg or not mn or mn[0][1] <= 0:
                fail("rank %d %s: latency gauges missing" % (rank, operation))
            out[labels["size_class"]] = bw * avg[0][1] / mn[0][1]
        return out

    checked = 0
    worst = 0.0
    for groups, ops, gbps in ((TP_GROUPS, ("AllGather", "ReduceScatter"), INTRA_GBPS),
                              (DP_GROUPS, ("AllReduce",), INTRA_GBPS),
                              (PP_GROUPS, ("Send", "Recv"), INTER_GBPS)):
        for group in groups:
            for op in ops:
                by_class = {}
                for rank in group:
                    for size_class, bw in best_busbw(rank, op).items():
                        by_class[size_class] = max(by_class.get(size_class, 0), bw)
                if not by_class:
                    fail("group %s has no %s bandwidth" % (group, op))
                for size_class, bw in by_class.items():
                    got = bw / 1e9
                    worst = max(worst, abs(got - gbps) / gbps)
                    if abs(got - gbps) > TOLERANCE * gbps:
                        fail("group %s %s %s: bus bandwidth %.1f GB/s, configured %.0f" %
                             (group, op, size_class, got, gbps))
                    checked += 1
    log("bus bandwidth: %d (group, operation, size) series within 5%% of the configured "
        "%.0f GB/s intra-node / %.0f GB/s inter-node (largest deviation %.2f%%)" %
        (checked, INTRA_GBPS, INTER_GBPS, 100 * worst))

    # Sequence numbers agree across each communicator's ranks; nothing in flight.
    comms = {}
    for labels, v in select(everything, "xtimer_comm_last_completed_seq"):
        if labels["comm"] == "none":
            continue
        comms.setdefault(labels["comm"], {})[int(labels["rank"])] = v
    issued = {(l["comm"], l["rank"]): v for l, v in select(everything, "xtimer_comm_last_issued_seq")}
    sizes = {l["comm"]: v for l, v in select(everything, "xtimer_comm_size")}
    if len(comms) < 1 + 4 + 4 + 4:  # world, 4 TP, 4 DP, 4 PP
        fail("expected at least 13 communicators, found %d" % len(comms))
    for comm, by_rank in comms.items():
        if len(by_rank) != sizes.get(comm):
            fail("comm %s: %d ranks report, size %s" % (comm, len(by_rank), sizes.get(comm)))
        if len(set(by_rank.values())) != 1:
            fail("comm %s: last completed seq differs across ranks: %s" % (comm, by_rank))
        for rank, seq in by_rank.items():
            if issued.get((comm, str(rank))) != seq:
                fail("comm %s rank %d: issued %s, completed %s" %
                     (comm, rank, issued.get((comm, str(rank))), seq))
    log("sequence numbers agree across the ranks of all %d communicators" % len(comms))


def query_prometheus(prom, port):
    """Waits until Prometheus has scraped all 8 ranks from the two daemons."""
    query = "count(xtimer_rank_up == 1)"
    deadline = time.monotonic() + 8
    last = None
    while time.monotonic() < deadline:
        try:
            url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(query))
            with urllib.request.urlopen(url, timeout=2) as r:
                result = json.load(r)["data"]["result"]
            last = result[0]["value"][1] if result else None
            if last == "8":
                return "prometheus: %s = 8 across both emulated nodes' daemons" % query
        except (OSError, ValueError, KeyError, IndexError):
            pass
        time.sleep(0.5)
    fail("prometheus never saw 8 ranks up (last answer %s):\n%s" % (last, prom.output()))


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Timeline dumps through the control port, end to end.

1. The demo job (8 ranks, 2 emulated nodes, tp2-pp2-dp2), each node under its own xtimer-launch
   and xtimerd (own run directory, metrics and control ports, XTIMER_DUMP_ROOT):
   - the seed's curl command, verbatim but for a dump_path inside the dump root and a dump_time
     two seconds ahead, answers 200 on node 0 and writes node 0's 4 rank files;
   - one `xtimer dump --hosts node0,node1` call (gRPC, one shared dump_time) writes all 8 ranks'
     files, {rank:05d}-00008.timeline under DIR/<job>/ on each node;
   - every file reads back complete with the project's reader, with its identity, events and a
     communicator table whose members are known on the node;
   - a bad request over curl gets 400 naming the field;
   - `xtimer timeline` turns the 8 files into one Perfetto trace, decoded with the project's
     schema (//timeline:trace_summary): 8 rank processes with per-stream threads, one slice per
     dumped event, GEMM durations equal to the simulator's model (2·m·n·k·batch at the
     configured bf16 TFLOPS): none shorter, the shortest of each shape and nearly all of those
     queued behind earlier work equal to it; flows joining
     each collective's ranks and each launch to its slice; Perfetto's own trace processor loads
     it without errors and agrees with the decoder (timeline/perfetto_tp/check_trace.py);
     kernel slices are named by the demo's demangled kernel names (kernels are timed by
     default) and stream tracks 'dev D stream N (kinds)', never by a host pointer.
2. A 2-rank job hung with the simulator's knob (XTIMER_SIM_HANG=1:3): `xtimer dump --history`
   succeeds at once while the job is hung, and both files hold the collectives completed before
   the hang.

Usage: dump_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER TIMELINE_CHECK
                   TRACE_SUMMARY CHECK_TRACE_PY QUERY_MJS
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, status,  # noqa: E402
                     stop_daemon, wait_ranks)

JOB = "e2e-dump"
# The simulator's bf16 rate for the demo part: GEMMs of the demo's shapes take 0.07-1 ms.
TFLOPS_BF16 = 0.25
# A GEMM whose GPU start is this long after its launch was queued behind earlier work, so its
# CUDA-event duration is the GEMM alone. On an idle stream the start event fires when it is
# recorded and the duration includes the host's time to enqueue the GEMM (as on a real GPU).
QUEUED_NS = 200000


def wait_dump_done(port, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = status(port)["last_dump"]
        if d["state"] != "capturing":
            return d
        time.sleep(0.2)
    fail("the dump on :%d did not finish within %d s" % (port, timeout))


def check_files(check, paths, want_events=None):
    p = subprocess.run([check] + paths, capture_output=True, text=True)
    infos = [json.loads(line) for line in p.stdout.splitlines()]
    if p.returncode != 0 or len(infos) != len(paths):
        fail("timeline_check failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    for info in infos:
        if not info["ok"] or not info["complete"]:
            fail("%s does not read back: %s" % (info["path"], info["error"]))
        if want_events is not None and info["events"] != want_events:
            fail("%s: %d events, expected %d" % (info["path"], info["events"], want_events))
    return infos


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def python_grpc_dump(port, path):
    """The same service from Python's grpcio (no generated code: hand-encoded messages)."""
    try:
        import grpc
    except ImportError:
        log("python3-grpcio is not installed: skipping the Python gRPC client")
        return None
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    dump = channel.unary_unary("/HostingService/DumpKernelTrace")
    p = path.encode()
    # DumpKernelTraceRequest{dump_path = 1, history = 7}
    resp = dump(b"\x0a" + varint(len(p)) + p + b"\x38" + varint(50), timeout=10)
    try:
        dump(b"\x0a" + varint(len(p)) + p + b"\x38" + varint(-1), timeout=10)
        fail("Python gRPC: history -1 was accepted")
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.INVALID_ARGUMENT or "history" not in e.details():
            fail("Python gRPC: history -1 answered %s %s" % (e.code(), e.details()))
    channel.close()
    return resp


def run(argv, timeout=120):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


# The demo's kernels (demo/train_step.cu), timed by default: a kernel slice is named by its
# demangled name, e.g. "(anonymous namespace)::LayerNorm(__nv_bfloat16 const*, __nv_bfloat16*,
# int)" or "void (anonymous namespace)::Heads<false>(...)"; never "KernelLaunch" or "kernel@0x...".
DEMO_KERNELS = {"InitUniform", "Embedding", "LayerNorm", "Heads", "CausalSoftmax",
                "SoftmaxBackward", "GeluForward", "GeluBackward", "AddInPlace", "LossGrad",
                "SgdUpdate"}
# A kernel slice's name is the kernel's short name (util/kernel_name.h: the function and its
# template's head); its full demangled name, where longer, is the slice's `signature` argument.
KERNEL_SHORT = re.compile(r"^(\w+)(?:<[^()]*>)?$")
KERNEL_NAME = re.compile(r"^(?:void )?(?:\(anonymous namespace\)::)?(\w+)(?:<[^()]*>)?\(.*\)$")
STREAM_TRACK = re.compile(r"^dev \d+ stream \d+ \([a-z0-9_, ]+\)$")


def check_kernels_and_streams(slices, streams):
    """Kernel slices carry the demo's demangled kernel names; stream tracks are numbered."""
    seen = set()
    for s in slices:
        if s["cat"] != "kernel":
            continue
        m = KERNEL_SHORT.match(s["name"])
        if not m or m.group(1) not in DEMO_KERNELS:
            fail("kernel slice named %r: not one of the demo's kernels %s by its short name"
                 % (s["name"], sorted(DEMO_KERNELS)))
        full = s.get("args", {}).get("signature")
        if full is not None:
            f = KERNEL_NAME.match(full)
            if not f or f.group(1) != m.group(1):
                fail("kernel slice %r: its signature %r is not its demangled name"
                     % (s["name"], full))
        seen.add(m.group(1))
    if len(seen) < 3:
        fail("the trace names %d of the demo's kernels (%s): kernels are timed by default"
             % (len(seen), sorted(seen)))
    for pid, names in streams.items():
        for name in names:
            if not STREAM_TRACK.match(name):
                fail("rank %d: stream track %r is not named 'dev D stream N (kinds)'"
                     % (pid - 1, name))
        if not any(" stream 1 (" in n for n in names):
            fail("rank %d: no stream numbered 1 among %s" % (pid - 1, names))
    return seen


def check_report_cost(xtimer, dump_dir, tmp):
    """`xtimer report` of the daemons' dump says what xtimer cost each of the 8 ranks (the hook
    cost the daemon wrote into each timeline file) and the default budget of 1%."""
    html = os.path.join(tmp, "report.html")
    rc, out = run([xtimer, "report", dump_dir, "-o", html, "-q"], timeout=120)
    if rc not in (0, 3) or not os.path.exists(html):
        fail("xtimer report exited %d: %s" % (rc, out))
    with open(html) as f:
        page = f.read()
    section = page[page.find('<section id="cost">'):]
    section = section[:section.find("</section>")]
    if "against a budget of 1.00%" not in section or section.count("<tr>") != 9:
        fail("the report's cost section should name the 1%% budget and 8 ranks:\n" + section)
    log("xtimer report: " + re.sub("<[^>]+>", "", section.split("\n")[1]))


def check_trace(summary_tool, trace, infos):
    """The converted trace of the dumped files, decoded with the project's Perfetto schema."""
    p = subprocess.run([summary_tool, trace], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("trace_summary %s failed (%d): %s" % (trace, p.returncode, p.stderr))
    t = json.loads(p.stdout)
    procs = {pr["pid"]: pr for pr in t["processes"]}
    if sorted(procs) != list(range(1, 9)):
        fail("trace processes %s, expected pids 1..8 (ranks 0..7)" % sorted(procs))
    for pid, pr in procs.items():
        if not pr["name"].startswith("rank %d (" % (pid - 1)):
            fail("process %d is named %r" % (pid, pr["name"]))
    threads = {th["uuid"]: th for th in t["threads"]}
    streams = {}
    for th in t["threads"]:
        if th["name"].startswith("dev "):
            streams.setdefault(th["pid"], []).append(th["name"])
        elif th["name"] not in ("host (launches, syncs)", "steps", "steps (guessed)"):
            fail("unexpected thread %r" % th["name"])
    for pid in procs:
        if len(streams.get(pid, [])) < 2:
            fail("rank %d: stream threads %s, expected compute and communication streams"
                 % (pid - 1, streams.get(pid)))
    # The ops' slices; the steps track's (docs/perfetto.md, trace layout) are no events.
    slices = [s for s in t["slices"] if s["cat"] != "step"]
    kernels = check_kernels_and_streams(slices, streams)
    want = sum(i["events"] for i in infos)
    if len(slices) != want:
        fail("the trace has %d slices, the files %d events" % (len(slices), want))
    pid_of = {uuid: th["pid"] for uuid, th in threads.items()}
    launch_of = {}  # launch flow id -> (time, pid) of its launch instant
    for i in t["instants"]:
        for f in i["flows"]:
            launch_of[f] = (i["ts"], pid_of[i["track"]])

    # GEMM durations against the simulator's model, 2*m*n*k*batch / (TFLOPS * 1e12) seconds:
    # none shorter; the shortest of each shape equal to it; and nearly all GEMMs that were queued
    # behind earlier work equal to it. (A queued GEMM can still include a host gap: when the host
    # is descheduled between recording the start event and enqueuing the GEMM, as happens with 8
    # ranks and 2 daemons on 2 cores, the stream runs dry in between.)
    shortest, queued, exact, worst = {}, 0, 0, 0.0
    for s in slices:
        if s["cat"] != "matmul":
            continue
        a = s["args"]
        dims = dict(kv.split("=") for kv in a["shape"].split()[:4])
        flop = 2.0 * int(dims["m"]) * int(dims["n"]) * int(dims["k"]) * max(int(dims["batch"]), 1)
        if a["dtype"] != "bf16":
            fail("GEMM %s: dtype %s, the demo runs bf16" % (s["name"], a["dtype"]))
        model_ns = flop / (TFLOPS_BF16 * 1e12) * 1e9
        if s["dur"] < model_ns * (1 - 1e-3):
            fail("rank %d %s %s: %d ns, shorter than the model's %.0f ns" % (
                pid_of[s["track"]] - 1, s["name"], a["shape"], s["dur"], model_ns))
        key = (s["name"], a["shape"])
        if key not in shortest or s["dur"] < shortest[key][0]["dur"]:
            shortest[key] = (s, model_ns)
        launch = [launch_of[f][0] for f in s["terminating"] if f in launch_of]
        if len(launch) == 1 and s["ts"] - launch[0] >= QUEUED_NS:
            queued += 1
            dev = abs(s["dur"] - model_ns) / model_ns
            if dev <= 1e-3:
                exact += 1
                worst = max(worst, dev)
    for (name, shape), (s, model_ns) in sorted(shortest.items()):
        if abs(s["dur"] - model_ns) > 1e-3 * model_ns:
            fail("%s %s: the shortest takes %d ns, the model says %.0f ns" % (
                name, shape, s["dur"], model_ns))
        if abs(float(s["args"]["tflops"]) - TFLOPS_BF16) > 1e-3 * TFLOPS_BF16:
            fail("%s %s: tflops argument %s, configured %g" % (
                name, shape, s["args"]["tflops"], TFLOPS_BF16))
    if queued < 8 or exact < 0.9 * queued:
        fail("of %d GEMMs queued behind earlier work only %d take the modelled time" %
             (queued, exact))
    gemms = sum(1 for s in slices if s["cat"] == "matmul")

    # Collective flows: every (communicator, sequence) ending inside the window that all 8
    # ranks captured joins exactly its communicator's ranks.
    first_end = max(min(s["ts"] + s["dur"] for s in slices if pid_of[s["track"]] == pid)
                    for pid in procs)
    last_end = min(max(s["ts"] + s["dur"] for s in slices if pid_of[s["track"]] == pid)
                   for pid in procs)
    margin = (last_end - first_end) // 10
    lo, hi = first_end + margin, last_end - margin
    pids_of, labels_of, ends = {}, {}, {}
    for s in slices:
        if s["cat"] != "collective":
            continue
        if len(s["flows"]) != 1:
            fail("collective slice %s carries flows %s" % (s["name"], s["flows"]))
        f = s["flows"][0]
        pids_of.setdefault(f, set()).add(pid_of[s["track"]])
        labels_of.setdefault(f, set()).add(s["args"]["comm"])
        ends.setdefault(f, []).append(s["ts"] + s["dur"])
    joined = 0
    for f, pids in pids_of.items():
        if len(labels_of[f]) != 1:
            fail("flow %s joins slices of different communicators %s" % (f, labels_of[f]))
        # "0x… (4 ranks: 0 2 4 6)": members merged by the converter from every node's files.
        label = list(labels_of[f])[0]
        n = int(label.split("(")[1].split()[0])
        members = sorted(int(r) for r in label.split(": ")[1].rstrip(")").split())
        if len(members) != n:
            fail("communicator %s: members not all known" % label)
        ranks = sorted(x - 1 for x in pids)
        if not set(ranks) <= set(members):
            fail("flow %s joins ranks %s, not all members of %s" % (f, ranks, label))
        if lo <= min(ends[f]) and max(ends[f]) <= hi:
            if ranks != members:
                fail("collective flow %s (%s) inside the common window joins ranks %s only"
                     % (f, label, ranks))
            joined += 1
    if joined < 10:
        fail("only %d collectives inside the window all ranks captured" % joined)

    # Send/recv flows (top two id bits 11): a send's flow ends at the "Recv done" instant at the
    # end of a receive on another rank, later than the send began (Perfetto draws the arrow from
    # the earlier end, so send -> receive even where the receive was posted first).
    sends, recvs = {}, {}
    for s in slices + t["instants"]:
        for f in s["flows"]:
            if int(f) >> 62 == 3:
                if s["name"] != "Send" or f in sends:
                    fail("send/recv flow %s starts at %s or twice" % (f, s["name"]))
                sends[f] = (pid_of[s["track"]], s["ts"])
        for f in s["terminating"]:
            if int(f) >> 62 == 3:
                if s["name"] != "Recv done" or s["dur"] != 0 or f in recvs:
                    fail("send/recv flow %s ends at %s or twice" % (f, s["name"]))
                recvs[f] = (pid_of[s["track"]], s["ts"])
    p2p_linked = [f for f in sends if f in recvs]
    for f in p2p_linked:
        if sends[f][0] == recvs[f][0]:
            fail("send/recv flow %s stays on rank %d" % (f, sends[f][0] - 1))
        if recvs[f][1] <= sends[f][1]:
            fail("send/recv flow %s: the receive ends at %d, before its send begins at %d"
                 % (f, recvs[f][1], sends[f][1]))
    # Arrivals moved to 1 ns after their send's start (the receive read as ending up to 100 us
    # before it): timer noise, so few.
    clamped = sum(1 for f in p2p_linked if recvs[f][1] == sends[f][1] + 1)
    if clamped * 4 > len(p2p_linked):
        fail("%d of %d receives read as ending before their send began" %
             (clamped, len(p2p_linked)))
    # A send near either end of the dump may have its receive outside the receiver's 300 events:
    # only the sends that end inside what their receiver captured must find theirs.
    span = {}
    for s in slices:
        b, e = span.get(pid_of[s["track"]], (s["ts"], s["ts"] + s["dur"]))
        span[pid_of[s["track"]]] = (min(b, s["ts"]), max(e, s["ts"] + s["dur"]))

    def receiver_captured(s):
        b, e = span.get(int(s["args"].get("peer", -2)) + 1, (1, 0))
        return b <= s["ts"] and s["ts"] + s["dur"] <= e

    checkable = [s for s in slices if s["cat"] == "p2p" and s["name"] == "Send" and
                 receiver_captured(s)]
    linked_sends = sum(1 for s in checkable if any(f in recvs for f in s["flows"]))
    if checkable and not linked_sends:
        fail("%d sends inside what their receivers captured, none linked to its receive (%d "
             "send/recv slices in all)" % (len(checkable),
                                            sum(1 for s in slices if s["cat"] == "p2p")))
    log("send/recv: %d of the %d sends inside what their receivers captured linked to their "
        "receives (%d send/recv slices in all)" % (
            linked_sends, len(checkable), sum(1 for s in slices if s["cat"] == "p2p")))

    # Launch flows: each GPU slice's terminating flow starts at a launch instant of its rank.
    linked = 0
    for s in slices:
        for f in s["terminating"]:
            if int(f) >> 62 == 3:
                continue
            if f not in launch_of or launch_of[f][1] != pid_of[s["track"]]:
                fail("slice %s: launch flow %s has no launch instant on its rank" % (s["name"], f))
            linked += 1
    if linked < len(slices) // 2:
        fail("only %d of %d slices are linked to their launch" % (linked, len(slices)))
    log("trace: kernel slices named by the demo's demangled kernel names (%s), stream tracks "
        "'dev D stream N (kinds)'" % ", ".join(sorted(kernels)))
    log("trace: 8 rank processes with %d stream threads, %d slices (= dumped events, %d "
        "compressed packets), %d GEMMs none shorter than the model, the shortest of each of %d "
        "shapes and %d of %d queued ones at the modelled duration (largest deviation %.4f%%), "
        "%d collectives joining exactly their communicator's members, %d sends linked to their "
        "receives (%d arrivals moved to just after the send's start), %d launch flows" % (
            sum(len(v) for v in streams.values()), len(slices), t["compressed_packets"], gemms,
            len(shortest), exact, queued, 100 * worst, joined, len(p2p_linked), clamped, linked))


def demo_part(p, xtimer, check, trace_tools):
    summary_tool, check_trace_py, query_mjs = trace_tools
    tmp = p.tmp
    root = os.path.join(tmp, "dumps")
    run_dirs = [p.run_dir("node%d" % i) for i in range(2)]
    m0, m1, c0, c1 = free_ports(4)
    controls = [c0, c1]
    env = dict(os.environ)
    env["XTIMER_DUMP_ROOT"] = root
    env["XTIMER_SIM_TFLOPS_BF16"] = str(TFLOPS_BF16)
    nodes = []
    try:
        for i in range(2):
            argv_i = p.launch_argv(run_dirs[i], [m0, m1][i], controls[i], JOB) + [
                sys.executable, p.demo_launch, "--nnodes", "2", "--nproc-per-node", "4",
                "--node-rank", str(i), "--rdzv-dir", os.path.join(tmp, "rdzv"), "--timeout",
                "300", "--", p.gpusim_run, p.train_step, "--tp", "2", "--pp", "2", "--steps",
                "100000", "--hidden", "256", "--seq", "256", "--layers", "2"]
            nodes.append(Background("node%d" % i, argv_i, env, tmp))
        wait_ranks(c0, [0, 1, 2, 3], 120)
        wait_ranks(c1, [4, 5, 6, 7], 120)
        log("8 ranks registered with records flowing on 2 daemons (control :%d, :%d)" % (c0, c1))

        # The seed's command, verbatim but for the path and a dump_time slightly ahead.
        out_dir = os.path.join(root, "output")
        cmd = ("curl -s -w '\\n%%{http_code}' -H 'Content-Type: application/json' -d "
               "\"{\\\"dump_path\\\":\\\"%s\\\", \\\"dump_count\\\": 200, \\\"dump_time\\\": "
               "$(( $(date +%%s) + 2 )), \\\"dump_kernel_type\\\": 7}\" "
               "127.0.0.1:%d/HostingService/DumpKernelTrace" % (out_dir, c0))
        log("$ " + cmd)
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        body, _, code = r.stdout.rpartition("\n")
        if code != "200":
            fail("the seed's curl command answered %s: %s %s" % (code, body, r.stderr))
        answer = json.loads(body)
        log("answer: " + answer["message"])
        done = wait_dump_done(c0, 60)
        paths = sorted(f["path"] for f in done["files"])
        want = [os.path.join(out_dir, JOB, "%05d-00008.timeline" % rank) for rank in range(4)]
        if paths != want:
            fail("curl dump wrote %s, expected %s" % (paths, want))
        check_files(check, paths, want_events=200)
        log("curl: node 0's 4 rank files, 200 events each, read back complete")

        # A bad request over curl.
        r = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "-d",
                            '{"dump_path":"/etc/x","dump_count":5}',
                            "127.0.0.1:%d/HostingService/DumpKernelTrace" % c0],
                           capture_output=True, text=True, timeout=30)
        body, _, code = r.stdout.rpartition("\n")
        if code != "400" or "dump_path" not in body:
            fail("path outside the root: expected 400 naming dump_path, got %s %s" % (code, body))
        log("curl: a path outside the dump root gets 400: " + json.loads(body)["error"])

        # One `xtimer dump` call for both nodes (gRPC, one shared dump_time).
        hosts = "127.0.0.1:%d,127.0.0.1:%d" % (c0, c1)
        rc, out = run([xtimer, "dump", "--hosts", hosts, "--path", "run1", "--count", "300",
                       "--delay", "2"], timeout=120)
        log("$ xtimer dump --hosts %s --path run1 --count 300 --delay 2\n%s" % (hosts, out))
        if rc != 0:
            fail("xtimer dump exited %d" % rc)
        paths = [os.path.join(root, "run1", JOB, "%05d-00008.timeline" % r) for r in range(8)]
        for path in paths:
            if path not in out:
                fail("xtimer dump did not report %s" % path)
        infos = check_files(check, paths, want_events=300)
        for rank, info in enumerate(infos):
            if info["rank"] != rank or info["world"] != 8 or info["job"] != JOB:
                fail("%s: identity %s" % (info["path"], info))
            if not info["comms"]:
                fail("%s: no communicator table" % info["path"])
            for c in info["comms"]:
                if rank not in c["members"] or len(c["members"]) != c["size"]:
                    fail("%s: communicator %s does not list rank %d" % (info["path"], c, rank))
            ids = {c["id"] for c in info["comms"]}
            if not any(c["parent"] in ids for c in info["comms"]):
                fail("%s: no communicator names its parent (the demo splits TP, DP and PP "
                     "communicators from the world): %s" % (info["path"], info["comms"]))
            if not info["kinds"].get("1") or not info["kinds"].get("2"):
                fail("%s: expected matmuls and collectives, got %s" % (info["path"], info["kinds"]))
        log("xtimer dump: all 8 ranks' files (300 events each) on 2 nodes read back complete, with "
            "identities and communicator tables")

        # The dumped files of the whole job become one Perfetto trace.
        trace = os.path.join(tmp, "job.pftrace")
        rc, out = run([xtimer, "timeline", os.path.join(root, "run1", JOB), "-o", trace],
                      timeout=120)
        log("$ xtimer timeline run1/%s -o job.pftrace\n%s" % (JOB, out))
        if rc != 0 or "8 ranks" not in out or not os.path.getsize(trace):
            fail("xtimer timeline did not convert the 8 dumped ranks (exit %d)" % rc)
        keep = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
        if keep:  # bazel zips these into bazel-testlogs/.../test.outputs for a look afterwards
            shutil.copytree(os.path.join(root, "run1", JOB), os.path.join(keep, "run1"))
            shutil.copy(trace, keep)
        check_report_cost(xtimer, os.path.join(root, "run1", JOB), tmp)
        check_trace(summary_tool, trace, infos)
        r = subprocess.run([sys.executable, check_trace_py, query_mjs, summary_tool, trace],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail("Perfetto's trace processor on the job's trace:\n" + r.stdout + r.stderr[-2000:])
        log(r.stdout.strip())
    finally:
        for node in nodes:
            node.kill()
        for d in run_dirs:
            stop_daemon(d)


def hang_part(p, xtimer, check):
    root = os.path.join(p.tmp, "dumps-hang")
    run_dir = p.run_dir("hang")
    metrics, control = free_ports(2)
    env = dict(os.environ)
    env.update({"XTIMER_DUMP_ROOT": root, "XTIMER_HANG_TIMEOUT": "2", "XTIMER_SIM_HANG": "1:3"})
    job = Background("hung", p.launch_argv(run_dir, metrics, control, "hung") + [
        sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "120", "--", p.gpusim_run,
        p.train_step, "--tp", "2", "--steps", "5", "--hidden", "256", "--seq", "256", "--layers",
        "2"], env, p.tmp)
    try:
        job.wait_for_line(r"XTIMER_SIM_HANG: rank 1 hangs", 60)
        time.sleep(1)  # the last completed records reach the daemon
        if job.proc.poll() is not None:
            fail("the job was expected to hang, but exited %s" % job.proc.returncode)
        t0 = time.monotonic()
        rc, out = run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % control, "--path", "hang",
                       "--history", "100000"], timeout=60)
        elapsed = time.monotonic() - t0
        log("$ xtimer dump --history 100000 --path hang  (%.2f s)\n%s" % (elapsed, out))
        if rc != 0:
            fail("history dump while hung exited %d" % rc)
        paths = [os.path.join(root, "hang", "hung", "%05d-00002.timeline" % r) for r in range(2)]
        infos = check_files(check, paths)
        for info in infos:
            if not info["kinds"].get("2") or not info["collective_seq_end"]:
                fail("%s: no collectives before the hang: %s" % (info["path"], info))
        resp = python_grpc_dump(control, "hang-py")
        if resp is not None:
            want = os.path.join(root, "hang-py", "hung", "00000-00002.timeline")
            if want.encode() not in resp:
                fail("Python gRPC dump: %s not in the answer %r" % (want, resp))
            check_files(check, [want])
            log("python3-grpcio client: history dump written and read back; history -1 gets "
                "INVALID_ARGUMENT naming the field")
        if job.proc.poll() is not None:
            fail("the job stopped hanging during the dump")
        log("history dump while hung: %s collectives per rank before the hang, read back complete"
            % [i["kinds"].get("2") for i in infos])
    finally:
        job.kill()
        stop_daemon(run_dir)


def main(argv):
    if len(argv) != 12:
        fail(__doc__)
    xtimer, check, summary_tool, check_trace_py, query_mjs = [
        os.path.abspath(a) for a in argv[7:12]]
    p = Paths(argv[:7], __doc__)
    try:
        demo_part(p, xtimer, check, (summary_tool, check_trace_py, query_mjs))
        hang_part(p, xtimer, check)
    finally:
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Checks traces written by `xtimer timeline` with Perfetto's own trace processor.

Each trace is loaded twice, by Perfetto's trace processor (query.mjs, the WebAssembly build that
ui.perfetto.dev runs) and by the project's decoder (trace_summary, timeline/trace_decoder.h), and
the two must agree: the same processes, threads, slices (time, duration, name, category, thread),
flows and arguments, with no import errors or data losses in the trace processor's stats. Every
send/recv flow in the trace processor's flow table must run from a Send to a "Recv done" instant
in another process.

Usage: check_trace.py [--chunk-bytes N] QUERY_MJS TRACE_SUMMARY TRACE.pftrace...
--chunk-bytes N: hand the trace to the trace processor N bytes at a time (query.mjs's option;
default 16 MiB).
The trace processor is looked for in $XTIMER_PERFETTO_TP, else /var/cache/xtimer/perfetto-tp-v55.3
(tools/install-perfetto-tp.sh installs it). Exit status 0 when every trace agrees.
"""

import collections
import json
import os
import subprocess
import sys

DEFAULT_TP = "/var/cache/xtimer/perfetto-tp-v55.3"

QUERIES = {
    "slices": "select s.ts, s.dur, s.name, s.category, t.tid from slice s "
              "join thread_track tt on s.track_id = tt.id join thread t using (utid)",
    "untracked": "select count(*) as n from slice s where s.track_id not in "
                 "(select id from thread_track)",
    "processes": "select pid, name from process where pid > 0",
    "threads": "select tid, name from thread where utid in (select utid from thread_track)",
    "flows": "select count(*) as n from flow",
    "args": "select count(*) as n from slice s join args a using (arg_set_id) "
            "where a.key glob 'debug.*'",
    "problems": "select name, idx, severity, value from stats where value > 0 "
                "and severity in ('error', 'data_loss')",
    # Every flow touching a send or receive, but for launch flows (from the host thread), with
    # both ends' processes, and the start of the last receive on the "Recv done" instant's thread
    # that ended by the instant's time.
    "p2p": "select so.name as out_name, so.ts as out_ts, ti.upid as in_upid, "
           "si.name as in_name, si.ts as in_ts, tt.upid as out_upid, "
           "(select r.ts from slice r where r.track_id = si.track_id and r.name = 'Recv' "
           "and r.ts + r.dur <= si.ts order by r.ts + r.dur desc limit 1) as recv_ts "
           "from flow f join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in "
           "join thread_track oo on so.track_id = oo.id join thread tt on tt.utid = oo.utid "
           "join thread_track ii on si.track_id = ii.id join thread ti on ti.utid = ii.utid "
           "where (so.category = 'p2p' or si.category = 'p2p') "
           "and tt.name not glob 'host (*'",
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def trace_processor(query_mjs, tp_dir, trace, chunk_args):
    names = list(QUERIES)
    p = subprocess.run(["node", query_mjs] + chunk_args + [tp_dir, trace] +
                       [QUERIES[n] for n in names], capture_output=True, text=True, timeout=300)
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or len(results) != len(names):
        errors = [r for r in results if "error" in r]
        fail("Perfetto's trace processor on %s (exit %d): %s\n%s" %
             (trace, p.returncode, errors, p.stderr[-2000:]))
    return {n: r["rows"] for n, r in zip(names, results)}


def ours(summary_tool, trace):
    p = subprocess.run([summary_tool, trace], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("trace_summary %s (exit %d): %s" % (trace, p.returncode, p.stderr))
    return json.loads(p.stdout)


def check(query_mjs, summary_tool, tp_dir, trace, chunk_args):
    tp = trace_processor(query_mjs, tp_dir, trace, chunk_args)
    me = ours(summary_tool, trace)
    if tp["problems"]:
        fail("%s: the trace processor reports %s" % (trace, tp["problems"]))
    if tp["untracked"][0]["n"]:
        fail("%s: %d slices are not on thread tracks" % (trace, tp["untracked"][0]["n"]))

    want_procs = sorted((p["pid"], p["name"]) for p in me["processes"])
    got_procs = sorted((r["pid"], r["name"]) for r in tp["processes"])
    if got_procs != want_procs:
        fail("%s: processes %s, the decoder says %s" % (trace, got_procs, want_procs))
    want_threads = sorted((t["tid"], t["name"]) for t in me["threads"])
    got_threads = sorted((r["tid"], r["name"]) for r in tp["threads"])
    if got_threads != want_threads:
        fail("%s: threads %s, the decoder says %s" % (trace, got_threads[:5], want_threads[:5]))

    tid_of = {t["uuid"]: t["tid"] for t in me["threads"]}
    want = collections.Counter(
        (s["ts"], s["dur"], s["name"], s["cat"], tid_of[s["track"]])
        for s in me["slices"] + me["instants"])
    got = collections.Counter((int(r["ts"]), int(r["dur"]), r["name"], r["category"], r["tid"])
                              for r in tp["slices"])
    if got != want:
        fail("%s: slices differ; only Perfetto: %s; only the decoder: %s" %
             (trace, list((got - want).items())[:3], list((want - got).items())[:3]))

    # A flow id on k slices is k-1 arrows (consecutive in time); a launch's is one.
    ends = collections.Counter()
    for s in me["slices"] + me["instants"]:
        for f in s["flows"] + s["terminating"]:
            ends[f] += 1
    want_flows = sum(k - 1 for k in ends.values())
    if tp["flows"][0]["n"] != want_flows:
        fail("%s: %d flows, the decoder's flow ids make %d" %
             (trace, tp["flows"][0]["n"], want_flows))
    sends, posted_first = check_p2p(trace, tp["p2p"])
    want_args = sum(len(s["args"]) for s in me["slices"] + me["instants"])
    if tp["args"][0]["n"] != want_args:
        fail("%s: %d debug arguments, the decoder has %d" % (trace, tp["args"][0]["n"], want_args))
    print("%s: Perfetto's trace processor and the decoder agree: %d processes, %d threads, "
          "%d slices, %d flows, %d arguments; no import errors (%d compressed packets); "
          "%d send -> receive flows in the data's direction (%d receives posted before their "
          "send)" %
          (os.path.basename(trace), len(got_procs), len(got_threads), sum(got.values()),
           want_flows, want_args, me["compressed_packets"], sends, posted_first))


def check_p2p(trace, rows):
    """Every send/recv flow must run from a Send to a "Recv done" instant in another process,
    after a receive on the instant's thread, as Perfetto's flow table says. (The instant is at
    its receive's end as recorded, which is later than the slice's end where the next operation
    on the stream cut the slice short, or 1 ns after the send's start where the receive reads as
    ending before it.) Returns (flows, receives that began before their send)."""
    posted_first = 0
    for r in rows:
        where = "%s: flow %s at %s -> %s at %s" % (trace, r["out_name"], r["out_ts"],
                                                   r["in_name"], r["in_ts"])
        if r["out_name"] != "Send" or r["in_name"] != "Recv done":
            fail(where + ": a send/recv flow must run from the Send to the Recv done instant")
        if r["out_upid"] == r["in_upid"]:
            fail(where + ": stays in one process")
        if r["recv_ts"] is None:
            fail(where + ": no Recv on the instant's thread ended by its time")
        if int(r["recv_ts"]) < int(r["out_ts"]):
            posted_first += 1
    return len(rows), posted_first


def main(argv):
    chunk_args = []
    if len(argv) > 2 and argv[1] == "--chunk-bytes":
        chunk_args, argv = argv[1:3], argv[:1] + argv[3:]
    if len(argv) < 4:
        fail(__doc__)
    query_mjs, summary_tool = argv[1], argv[2]
    tp_dir = os.environ.get("XTIMER_PERFETTO_TP", DEFAULT_TP)
    if not os.path.exists(os.path.join(tp_dir, "trace_processor.wasm")):
        fail("Perfetto's trace processor is not installed in %s: run tools/install-perfetto-tp.sh"
             % tp_dir)
    for trace in argv[3:]:
        check(query_mjs, summary_tool, tp_dir, trace, chunk_args)


if __name__ == "__main__":
    main(sys.argv)

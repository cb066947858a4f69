#!/bin/bash
# The golden job's trace, compressed (default) and plain, loaded by Perfetto's own trace processor
# and by the project's decoder: both must see the same trace (timeline/perfetto_tp/check_trace.py).
set -eu
XT=cli/xtimer
TMP=${TEST_TMPDIR:-/tmp}
$XT timeline timeline/testdata/node0 timeline/testdata/node1 --groups tp2-pp2-dp2 -q \
  -o "$TMP/compressed.pftrace"
$XT timeline timeline/testdata/node0 timeline/testdata/node1 --groups tp2-pp2-dp2 -q \
  --no-compress -o "$TMP/plain.pftrace"
python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/compressed.pftrace" "$TMP/plain.pftrace"
# Pipeline sends between two nodes, every other receive posted before its send: Perfetto's flow
# table must show each flow from the Send to the receiver's "Recv done" instant.
timeline/write_synthetic_job "$TMP/p2p" 4 2 4 --p2p >/dev/null
$XT timeline "$TMP/p2p/node0" "$TMP/p2p/node1" -q -o "$TMP/p2p.pftrace"
out=$(python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/p2p.pftrace")
echo "$out"
# 2 senders x 4 steps; odd steps (1 and 3) post the receive first.
grep -q "8 send -> receive flows in the data's direction (4 receives posted before" <<<"$out"

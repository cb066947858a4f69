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

#!/bin/bash
# A trace over 64 MiB (the most one request to the trace processor may carry) loads into
# Perfetto's own trace processor in chunks (query.mjs), with every slice and no import error.
# 64 ranks x 2,600 steps x 8 events = 1,331,200 slices, and 64 x 2,599 steps guessed from the
# collectives (docs/perfetto.md, the steps track): 1,497,536 slices, plain packets without launch
# instants (--no-compress --no-launches: about 55 bytes per slice, 83 MB). About 17 s on 2 busy
# cores.
set -eu
TMP=${TEST_TMPDIR:-/tmp}
TP=${XTIMER_PERFETTO_TP:-/var/cache/xtimer/perfetto-tp-v55.3}
start=$(date +%s)
timeline/write_synthetic_job "$TMP/large" 64 8 2600 >/dev/null
cli/xtimer timeline "$TMP/large" -q --no-compress --no-launches -o "$TMP/large.pftrace"
size=$(stat -c %s "$TMP/large.pftrace")
if [ "$size" -le $((64 * 1024 * 1024)) ]; then
  echo "FAIL: the trace has $size bytes, not more than 64 MiB"
  exit 1
fi
out=$(node timeline/perfetto_tp/query.mjs "$TP" "$TMP/large.pftrace" \
  "select count(*) as n from slice" \
  "select count(*) as n from stats where value > 0 and severity in ('error', 'data_loss')" \
  2>"$TMP/query.err") || { echo "FAIL: query.mjs"; tail -5 "$TMP/query.err"; exit 1; }
grep "^query.mjs: fed" "$TMP/query.err"
mapfile -t rows < <(grep '^{' <<<"$out")
[[ ${rows[0]-} == *'"rows":[{"n":1497536}]'* ]] || { echo "FAIL: slice count: $out"; exit 1; }
[[ ${rows[1]-} == *'"rows":[{"n":0}]'* ]] || { echo "FAIL: import errors: $out"; exit 1; }
echo "$size bytes: 1497536 slices, no import errors, in $(( $(date +%s) - start )) s"

#!/bin/bash
# `xtimer analyze` at scale: 1,024 ranks on 128 nodes x 10,000 steps (one GEMM and one AllReduce
# each: 10k collectives and 20.5 M events in all, 2.2 GB of timeline files), read and analysed
# on 2 reader threads. Figures go to docs/benchmarks.md.
#   bazel build -c opt //cli:xtimer //cli:write_test_job && cli/analyze_bench.sh [RANKS STEPS]
set -eu
RANKS=${1:-1024}
STEPS=${2:-10000}
BIN=${BIN:-bazel-bin/cli}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/xtimer-analyze-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
"$BIN/write_test_job" "$DIR" --ranks "$RANKS" --nodes $((RANKS / 8)) --steps "$STEPS" \
  --slow-rank 3 --skew-ns 2000000 >/dev/null
echo "dump: $(du -sh "$DIR" | cut -f1), $RANKS ranks x $STEPS collectives; load $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$DIR"/node*/*.timeline >/dev/null  # in the page cache, as a dump just copied is
for run in 1 2 3; do
  /usr/bin/time -f "run $run: wall %e s, user %U s, sys %S s, max RSS %M KB" \
    "$BIN/xtimer" analyze "$DIR" -j 2 -q >"$DIR/report.txt" 2>"$DIR/time.txt" || true
  tail -1 "$DIR/time.txt"
done
head -1 "$DIR/report.txt"
grep -m1 "Rank 3 " "$DIR/report.txt" || echo "(the straggler was not found)"

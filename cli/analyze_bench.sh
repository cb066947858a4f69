#!/bin/bash
# `xtimer analyze` at scale: 1,024 ranks on 128 nodes x 10,000 steps (one GEMM and one AllReduce
# each: 10k collectives and 20.5 M events in all, 2.2 GB of timeline files), read and analysed
# on 2 reader threads, three runs. Figures go to docs/benchmarks.md.
#   bazel build -c opt //cli:xtimer //cli:write_test_job && cli/analyze_bench.sh [RANKS STEPS]
# It fails (exit 1) when a run's resident memory is over MAX_RSS_MB (default 512: the stream's
# bound, whatever the machine's load), or, when MAX_USER_S is set, when the median run's user CPU
# seconds are over it (set it on an idle machine only). The input is deleted at the end.
set -eu
RANKS=${1:-1024}
STEPS=${2:-10000}
BIN=${BIN:-bazel-bin/cli}
MAX_RSS_MB=${MAX_RSS_MB:-512}
MAX_USER_S=${MAX_USER_S:-}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/xtimer-analyze-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
"$BIN/write_test_job" "$DIR" --ranks "$RANKS" --nodes $((RANKS / 8)) --steps "$STEPS" \
  --slow-rank 3 --skew-ns 2000000 >/dev/null
echo "dump: $(du -sh "$DIR" | cut -f1), $RANKS ranks x $STEPS collectives"
cat "$DIR"/node*/*.timeline >/dev/null  # in the page cache, as a dump just copied is
users=()
failed=0
for run in 1 2 3; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S %M" \
    "$BIN/xtimer" analyze "$DIR" -j 2 -q >"$DIR/report.txt" 2>"$DIR/time.txt" || true
  read -r wall user sys rss_kb < <(tail -1 "$DIR/time.txt")
  echo "run $run: wall $wall s, user $user s, sys $sys s, max RSS $((rss_kb / 1024)) MB (load $load)"
  users+=("$user")
  if [ $((rss_kb / 1024)) -gt "$MAX_RSS_MB" ]; then
    echo "FAIL: resident memory $((rss_kb / 1024)) MB is over $MAX_RSS_MB MB"
    failed=1
  fi
done
median=$(printf '%s\n' "${users[@]}" | sort -n | sed -n 2p)
echo "median user CPU: $median s"
if [ -n "$MAX_USER_S" ] && awk -v u="$median" -v m="$MAX_USER_S" 'BEGIN { exit !(u > m) }'; then
  echo "FAIL: median user CPU $median s is over $MAX_USER_S s"
  failed=1
fi
head -1 "$DIR/report.txt"
grep -m1 "Rank 3 " "$DIR/report.txt" || { echo "FAIL: the straggler was not found"; failed=1; }
exit $failed

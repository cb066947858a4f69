#!/bin/bash
# `xtimer stacks` at scale: RANKS ranks x 16 threads x 60 frames (default 1,024 and 8,192 ranks
# on 8 ranks per node), files read, parsed, merged and the three outputs written, on 2 reader
# threads. Then the largest input the limits allow (docs/stacks.md "Limits"): LARGEST files
# (default 1 and 8) of gen_stacks --largest (64 MiB each: 4,096 threads x 1,024 frames of 4 KiB
# names, every path its own), time and peak memory of one run each. Figures go to
# docs/benchmarks.md.
#   bazel build -c opt //cli:xtimer //stacktrace:gen_stacks && stacktrace/stacks_bench.sh [RANKS...]
#   (RANKS "none" skips the synthetic jobs; LARGEST="" skips the largest inputs)
set -eu
BIN=${BIN:-bazel-bin}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/xtimer-stacks-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
for RANKS in ${@:-1024 8192}; do
  [ "$RANKS" = none ] && continue
  rm -rf "$DIR/in" "$DIR/out"
  "$BIN/stacktrace/gen_stacks" "$DIR/in" --ranks "$RANKS" --nodes $((RANKS / 8)) --threads 16 \
    --frames 60 --outlier 3
  echo "$RANKS ranks x 16 threads x 60 frames: $(du -sh "$DIR/in" | cut -f1) of .stacks files;" \
       "load $(cut -d' ' -f1-3 /proc/loadavg)"
  cat "$DIR"/in/node*/*.stacks >/dev/null  # in the page cache, as files just written are
  for run in 1 2 3; do
    /usr/bin/time -f "run $run: wall %e s, user %U s, sys %S s, max RSS %M KB" \
      "$BIN/cli/xtimer" stacks "$DIR/in" -o "$DIR/out" -j 2 -q 2>"$DIR/time.txt" || true
    tail -1 "$DIR/time.txt"
  done
  head -3 "$DIR/out/summary.txt"
done
for FILES in ${LARGEST-1 8}; do
  rm -rf "$DIR/in" "$DIR/out"
  "$BIN/stacktrace/gen_stacks" "$DIR/in" --ranks "$FILES" --nodes 1 --largest 1
  echo "largest: $FILES file(s) of $(du -sh "$DIR"/in/node0/00000-*.stacks | cut -f1)," \
       "$(du -sh "$DIR/in" | cut -f1) in all; load $(cut -d' ' -f1-3 /proc/loadavg)"
  cat "$DIR"/in/node*/*.stacks >/dev/null
  /usr/bin/time -f "wall %e s, user %U s, sys %S s, max RSS %M KB" \
    "$BIN/cli/xtimer" stacks "$DIR/in" -o "$DIR/out" -j 2 -q 2>"$DIR/time.txt" || true
  cat "$DIR/time.txt"
  ls -l "$DIR/out" | awk 'NR > 1 {print "  " $9 ": " $5 " bytes"}'
done

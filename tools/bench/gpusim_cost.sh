#!/usr/bin/env bash
# tools/bench/gpusim_cost.sh: the GPU simulator's own host cost per kernel launch, event record
# and event query, in ns (Google Benchmark) and in instructions (callgrind, stable on a busy
# machine). Later hook measurements subtract these. Results: docs/benchmarks.md.
#   --calls N   calls per callgrind run (default 20000); instructions per call are
#               (Ir(2N) - Ir(N)) / N, which cancels start-up and tear-down.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
calls=20000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --calls) calls=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat "./VERSION"; exit 0 ;;
    *) echo "gpusim_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "gpusim_cost.sh: valgrind is required" >&2; exit 2; }
echo "building //test/gpusim/cudart:sim_bench (-c opt)..." >&2
bazel build -c opt //test/gpusim/cudart:sim_bench >&2
bench="$(bazel info -c opt bazel-bin 2>/dev/null)/test/gpusim/cudart/sim_bench"

echo "== wall time per call (Google Benchmark)"
"$bench" --benchmark_min_time=0.5

ir() {  # total instructions of `sim_bench --calls=$1 $2` under callgrind
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" "--calls=$1" "$2" 2>/dev/null
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
  rm -f "$out"
}
echo "== instructions per call (callgrind, N=$calls)"
for op in launch record query; do
  a=$(ir "$calls" "$op")
  b=$(ir $((2 * calls)) "$op")
  echo "$op: $(( (b - a) / calls )) instructions per call"
done

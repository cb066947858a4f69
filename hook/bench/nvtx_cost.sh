#!/usr/bin/env bash
# hook/bench/nvtx_cost.sh: what an NVTX push/pop pair costs the application with libxtimer.so as
# NVTX's injection library, against NVTX alone (no tool: NVTX's calls are no-ops), in ns (Google
# Benchmark) and in instructions on the calling thread (callgrind: (Ir(2N) - Ir(N)) / N).
#   --calls N        pairs per callgrind run (default 200000)
#   --output_base D  Bazel output base (default: Bazel's)
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
calls=200000
bazel=(bazel)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --calls) calls=$2; shift 2 ;;
    --output_base) bazel=(bazel "--output_base=$2"); shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat VERSION; exit 0 ;;
    *) echo "nvtx_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "nvtx_cost.sh: valgrind is required" >&2; exit 2; }
echo "building (-c opt)..." >&2
"${bazel[@]}" build --symlink_prefix=/ -c opt //hook:libxtimer.so //hook/bench:nvtx_bench >&2
bin="$("${bazel[@]}" info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)"
bench="$bin/hook/bench/nvtx_bench"
lib="$bin/hook/libxtimer.so"
export XTIMER_DAEMON_SOCKET=/nonexistent/xtimerd.sock  # no daemon: the poller drops the records
unset XTIMER_NVTX_FORWARD

echo "== wall time per pair (Google Benchmark), NVTX alone"
env -u NVTX_INJECTION64_PATH "$bench" --benchmark_min_time=0.5 2>&1 | grep -E '^BM_'
echo "== wall time per pair (Google Benchmark), libxtimer.so preloaded and NVTX's injection"
LD_PRELOAD="$lib" NVTX_INJECTION64_PATH="$lib" "$bench" --benchmark_min_time=0.5 2>&1 |
  grep -E '^BM_'

ir() {  # ir INJECTION N OP -> instructions of the main thread
  local dir t
  dir=$(mktemp -d)
  if [[ -n "$1" ]]; then
    LD_PRELOAD="$1" NVTX_INJECTION64_PATH="$1" valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$dir/cg" "$bench" "--calls=$2" "$3" 2>/dev/null
  else
    env -u NVTX_INJECTION64_PATH valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$dir/cg" "$bench" "--calls=$2" "$3" 2>/dev/null
  fi
  t=$(callgrind_annotate --threshold=100 "$dir/cg-01" 2>/dev/null |
    awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  rm -rf "$dir"
  echo "$t"
}
echo "== instructions per pair on the calling thread (callgrind, N=$calls)"
for op in push_pop domain_push_pop; do
  p1=$(ir "" "$calls" "$op"); p2=$(ir "" $((2 * calls)) "$op")
  h1=$(ir "$lib" "$calls" "$op"); h2=$(ir "$lib" $((2 * calls)) "$op")
  plain=$(( (p2 - p1) / calls )); hooked=$(( (h2 - h1) / calls ))
  echo "$op: NVTX alone $plain, with libxtimer.so $hooked, delta $((hooked - plain)) instructions per pair"
done

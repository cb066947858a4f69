#!/usr/bin/env bash
# hook/bench/hook_cost.sh: libxtimer.so's own host cost per timed op and per passed-through call,
# in ns (Google Benchmark, preloaded minus plain) and in instructions (callgrind). Both run the
# same nvcc-built program on the GPU simulator with and without LD_PRELOAD.
#   --calls N        calls per callgrind run (default 20000); per call: (Ir(2N) - Ir(N)) / N
#   --output_base D  Bazel output base (default: Bazel's)
# Instructions are reported two ways:
#   delta   preloaded minus plain per call: the hook's code plus the simulator's cost of the CUDA
#           calls the hook makes (peek, is-capturing, get-device, 2 event records, query,
#           2 elapsed-time); subtract the simulator's figures (docs/benchmarks.md) to compare.
#   own     instructions executed inside libxtimer.so itself (callgrind self cost of its object),
#           on the application's thread (the hot path) and on the poller thread: the simulator's
#           cost is excluded by construction. The poller's figure includes its idle cycles, which
#           scale with wall time (inflated ~50x under callgrind), not with calls.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
calls=20000
bazel=(bazel)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --calls) calls=$2; shift 2 ;;
    --output_base) bazel=(bazel "--output_base=$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat VERSION; exit 0 ;;
    *) echo "hook_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "hook_cost.sh: valgrind is required" >&2; exit 2; }
echo "building (-c opt)..." >&2
"${bazel[@]}" build --symlink_prefix=/ -c opt //hook:libxtimer.so //hook/bench:hook_bench \
  //test/gpusim:gpusim-run >&2
bin="$("${bazel[@]}" info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)"
bench="$bin/hook/bench/hook_bench"
lib="$bin/hook/libxtimer.so"
export LD_LIBRARY_PATH="$bin/test/gpusim"
export XTIMER_SIM_KERNEL_TIME_US=0
export XTIMER_KERNEL_FILTER='^timed_'
export XTIMER_DAEMON_SOCKET=/nonexistent/xtimerd.sock  # no daemon: the ring just fills
export XTIMER_OVERHEAD_BUDGET=100%  # every op timed, as measured before the budget existed

echo "== wall time per call (Google Benchmark), plain"
"$bench" --benchmark_min_time=0.5 2>&1 | grep -E '^BM_'
echo "== wall time per call (Google Benchmark), libxtimer.so preloaded"
LD_PRELOAD="$lib" "$bench" --benchmark_min_time=0.5 2>&1 | grep -E '^BM_'

ir() {  # ir PRELOAD N OP -> "total own_app own_poller" (instructions; all threads for total)
  local dir
  dir=$(mktemp -d)
  if [[ -n "$1" ]]; then
    LD_PRELOAD="$1" valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$dir/cg" "$bench" "--calls=$2" "$3" 2>/dev/null
  else
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg" \
      "$bench" "--calls=$2" "$3" 2>/dev/null
  fi
  # Per thread file (cg-01 is the application's main thread): the total, and the self cost of
  # the functions callgrind_annotate attributes to libxtimer.so.
  local total=0 own_main=0 own_other=0 f t o
  for f in "$dir"/cg-*; do
    t=$(callgrind_annotate --threshold=100 "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    o=$(callgrind_annotate --threshold=100 "$f" 2>/dev/null | awk '/libxtimer\.so\]/ {gsub(",", "", $1); s += $1} END {print s + 0}')
    total=$((total + t))
    if [[ "$f" == *-01 ]]; then own_main=$((own_main + o)); else own_other=$((own_other + o)); fi
  done
  echo "$total $own_main $own_other"
  rm -rf "$dir"
}
echo "== instructions per call (callgrind, N=$calls)"
measure() {  # measure OP LABEL
  local op=$1 p1 p2 h1 h2 a1 a2 o1 o2 plain hooked
  read -r p1 _ _ <<<"$(ir "" "$calls" "$op")"
  read -r p2 _ _ <<<"$(ir "" $((2 * calls)) "$op")"
  read -r h1 a1 o1 <<<"$(ir "$lib" "$calls" "$op")"
  read -r h2 a2 o2 <<<"$(ir "$lib" $((2 * calls)) "$op")"
  plain=$(( (p2 - p1) / calls ))
  hooked=$(( (h2 - h1) / calls ))
  echo "$2: plain $plain, preloaded $hooked, delta $((hooked - plain)); own code in libxtimer.so:" \
    "app thread $(( (a2 - a1) / calls )), poller $(( (o2 - o1) / calls )) instructions per call"
}
for op in passthrough timed memset allreduce; do measure "$op" "$op"; done
# The poller thread's own instructions split into the work of its cycles (once a cycle, however
# many ops it handles) and the rest (per op), with its number of cycles (Run's calls of Cycle):
# under callgrind cycles per call depend on scheduling, not on calls (docs/benchmarks.md).
poller_split() {  # poller_split OP N
  local dir cycles
  dir=$(mktemp -d)
  LD_PRELOAD="$lib" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$dir/cg" "$bench" "--calls=$2" "$1" 2>/dev/null
  # awk reads the whole report: a reader that stopped at the first match (grep -m1) would end
  # callgrind_annotate with SIGPIPE, which pipefail and set -e turn into the script's exit.
  cycles=$(callgrind_annotate --tree=caller --threshold=100 "$dir/cg-02" 2>/dev/null |
    awk '!found && /< .*Poller::Run\(\) \([0-9,]+x\) \[/ {
      found = 1; s = $0; sub(/.*Poller::Run\(\) \(/, "", s); sub(/x\).*/, "", s); gsub(",", "", s)
      print s
    }')
  callgrind_annotate --threshold=100 "$dir/cg-02" 2>/dev/null | awk -v cyc="${cycles:-0}" -v calls="$2" -v op="$1" '
    /libxtimer\.so\]/ {
      gsub(",", "", $1)
      if ($0 ~ /Poller::(Cycle|Run|PublishInflight|DescribeOldest|DescribeBlocker|Register|GrowPools|ResendPending|ResendIdentity)\(|RingWriter::(PublishUntimed|PublishInflight|Heartbeat)|GrowEventPool|insertion_sort|introsort|unguarded_linear_insert/) cyc_ir += $1
      else op_ir += $1
    }
    END { if (cyc > 0) printf "%s poller: %d cycles (%.2f per call), %.0f instructions per cycle, %.0f per call of per-op work\n", op, cyc, cyc / calls, cyc_ir / cyc, op_ir / calls }'
  rm -rf "$dir"
}
# One process driving two devices: per call a group of two all-reduces (halve for a collective).
measure allreduce2 "allreduce2 (a group of 2 collectives per call)"
poller_split allreduce2 $((2 * calls))
# The default: every kernel is timed (docs/hook.md "Kernels timed by default").
unset XTIMER_KERNEL_FILTER
measure timed "timed (XTIMER_KERNEL_FILTER unset)"
# The default budget (1%): under callgrind the hook's own time is most of the thread's, so after
# its first window (5 ms) it times almost no launch: N more calls cost N sampled-out launches
# (plus one timed per signature and second, and 1 in 2^20).
export XTIMER_OVERHEAD_BUDGET=1%
measure timed "sampled out by the budget (XTIMER_OVERHEAD_BUDGET=1%, a kernel launch)"
measure memset "sampled out by the budget (XTIMER_OVERHEAD_BUDGET=1%, cudaMemsetAsync)"
measure allreduce "tracked, untimed by the budget (XTIMER_OVERHEAD_BUDGET=1%, ncclAllReduce)"

#!/usr/bin/env bash
# hook/bench/overhead.sh: what xtimer costs a host-bound training step. Runs the nvcc-built
# host_bound_step program (-c opt; a step shaped like the real-GPU check's PyTorch loop) on the
# GPU simulator with and without libxtimer.so, in interleaved rounds, with a real xtimerd draining
# the ring, and prints each round's median step times and their ratio, then the median ratio.
# The simulator charges each CUDA call the host time it costs on an H200 (XTIMER_SIM_CALL_COSTS,
# docs/gpusim.md) unless --costs off, so that the figure predicts a real GPU. Each round also
# prints the time the step gained and the hook's own time per step as it reported it
# (xtimer_hook_overhead_seconds_total, scraped from the daemon; the warm-up steps included).
#   --rounds N     interleaved rounds (default 5)
#   --steps N      measured steps per run (default 200)
#   --host-us US   the framework's host time per op (default 8)
#   --costs C      h200 (default), h200-serialized (the driver runs one call at a time: the
#                  upper bound of the poller's calls slowing the application's) or off
#   --ranks N      ranks in the job's communicator (default 1, as the real-GPU check's one GPU;
#                  NCCL runs a 1-rank collective without a kernel)
#   --nccl-profiler  under xtimer, NCCL reports the collectives' completion (NCCL_PROFILER_PLUGIN
#                  = libxtimer.so, as XTIMER_NCCL_PROFILER=on makes xtimer-launch set it)
#   --env VAR=VAL  an extra variable for the runs under xtimer (repeatable)
# Rank 0's figures are printed, and how its untimed collectives were tracked (by mark / NCCL).
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
rounds=5 steps=200 host_us=8 costs=h200 ranks=1 nccl_profiler=0
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --host-us) host_us=$2; shift 2 ;;
    --costs) costs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --nccl-profiler) nccl_profiler=1; shift ;;
    --env) extra+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) head -n1 VERSION; exit 0 ;;
    *) echo "overhead.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
echo "building (-c opt)..." >&2
bazel build --symlink_prefix=/ -c opt //hook:libxtimer.so //hook/bench:host_bound_step \
  //test/gpusim:gpusim-run //daemon:xtimerd >&2
bin="$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)"
source hook/bench/bench_daemon.sh
start_bench_daemon overhead
export XTIMER_SIM_CALL_COSTS="$costs" XTIMER_SIM_KERNEL_TIME_US=2
step() {  # step hooked|plain [JOB] -> the median step in ms
  local env=() pre=""
  if [[ $1 == hooked ]]; then
    env=(XTIMER_DAEMON_SOCKET="$run_dir/xtimerd.sock" XTIMER_JOB="$2" "${extra[@]}")
    pre="$bin/hook/libxtimer.so"
    if [[ $nccl_profiler == 1 ]]; then env+=(NCCL_PROFILER_PLUGIN="$pre"); fi
  fi
  env "${env[@]}" LD_PRELOAD="$pre" "$bin/test/gpusim/gpusim-run" "$bin/hook/bench/host_bound_step" \
    --steps "$steps" --host-us "$host_us" --ranks "$ranks" |
    sed -n 's/^median step \([0-9.]*\) ms.*/\1/p'
}
# Rank 0's sample of metric $1 for job $2, with the extra label $3 (or ""); empty when absent.
rank0_metric() {
  curl -s "127.0.0.1:$metrics_port/metrics" | grep "^$1{" | grep -F "job=\"$2\"" |
    grep -F 'rank="0"' | grep -F "$3" | awk '{print $NF}' | head -n1 || true
}
# The hook's own time it reported for job $1 (xtimer_hook_overhead_seconds_total), ms per step.
own_ms() {
  local s
  s=$(rank0_metric xtimer_hook_overhead_seconds_total "$1" "")
  python3 -c "print(f'{${s:-0} * 1e3 / ($steps + 20):.3f}')"
}
tracked() { rank0_metric xtimer_hook_tracked_ops_total "$1" "by=\"$2\""; }
echo "round  plain_ms  xtimer_ms  ratio  added_ms  hook_reported_ms  tracked_by_mark  by_nccl"
ratios=()
for r in $(seq "$rounds"); do
  p=$(step plain)
  h=$(step hooked "overhead-$r")
  ratio=$(python3 -c "print(f'{$h/$p:.3f}')")
  ratios+=("$ratio")
  printf '%5d  %8.3f  %9.3f  %s  %8.3f  %16s  %15s  %7s\n' "$r" "$p" "$h" "$ratio" \
    "$(python3 -c "print($h - $p)")" "$(own_ms "overhead-$r")" \
    "$(tracked "overhead-$r" mark)" "$(tracked "overhead-$r" nccl)"
done
echo "median ratio $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (${#ratios[@]} + 1) / 2 ))p")" \
  "(costs: $costs, framework time ${host_us} us per op, $ranks ranks$(
    [[ $nccl_profiler == 1 ]] && echo ", NCCL reports completion"))"

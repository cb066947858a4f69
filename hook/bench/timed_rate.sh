#!/usr/bin/env bash
# hook/bench/timed_rate.sh: the share of ops libxtimer.so times at sustained op rates. Runs the
# nvcc-built timed_rate program (-c opt) on the GPU simulator under the hook, with a real xtimerd
# draining its ring, at each rate for the given time, and prints the program's counts and the
# daemon's xtimer_untimed_ops_total by cause.
#   --rates R1,R2,...  ops per second (default 50000,100000,270000)
#   --seconds S        seconds per rate (default 5)
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
rates=50000,100000,270000
seconds=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rates) rates=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat VERSION; exit 0 ;;
    *) echo "timed_rate.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
echo "building (-c opt)..." >&2
bazel build --symlink_prefix=/ -c opt //hook:libxtimer.so //hook/bench:timed_rate \
  //test/gpusim:gpusim-run //daemon:xtimerd >&2
bin="$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)"
source hook/bench/bench_daemon.sh
start_bench_daemon rate
export XTIMER_DAEMON_SOCKET="$run_dir/xtimerd.sock" XTIMER_SIM_KERNEL_TIME_US=0
IFS=, read -ra list <<<"$rates"
for rate in "${list[@]}"; do
  echo "== $rate ops/s for $seconds s"
  XTIMER_JOB="rate-$rate" LD_PRELOAD="$bin/hook/libxtimer.so" \
    "$bin/test/gpusim/gpusim-run" "$bin/hook/bench/timed_rate" "$rate" "$seconds"
  curl -s "127.0.0.1:$metrics_port/metrics" | grep "^xtimer_untimed_ops_total{.*job=\"rate-$rate\"" \
    | sed 's/{.*cause="\([a-z_]*\)".*} / \1 /' || true
done

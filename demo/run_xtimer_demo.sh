#!/usr/bin/env bash
# run_xtimer_demo.sh [--bin-dir DIR] [--keep-daemons]
#
# The demo job observed by xtimer: 8 ranks on 2 emulated nodes (tp2-pp2-dp2) on the GPU
# simulator, each node's launcher under its own `xtimer-launch`, so each emulated node gets its
# own xtimerd (run directory /tmp/xtimer-demo/nodeN, metrics on 127.0.0.1:18889 and :28889,
# control ports 18888 and 28888). While the ranks linger after their last step, it prints what
# both daemons' /metrics report. The daemons are stopped at the end unless --keep-daemons.
# Needs //demo:train_step, //test/gpusim:gpusim-run, //launcher:xtimer-launch, //daemon:xtimerd
# and //hook:libxtimer.so built under DIR (default: the repository's bazel-bin).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="$repo/bazel-bin"
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --keep-daemons) keep=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../VERSION"; exit 0 ;;
    *) echo "run_xtimer_demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for f in demo/train_step test/gpusim/gpusim-run launcher/xtimer-launch daemon/xtimerd hook/libxtimer.so; do
  [[ -e "$bin_dir/$f" ]] || { echo "run_xtimer_demo.sh: $bin_dir/$f is missing (build it first)" >&2; exit 2; }
done

root=/tmp/xtimer-demo
rdzv="$root/rdzv-$$"
mkdir -p "$root"
rm -f "$root/node0.out" "$root/node1.out"
ports=(18889 28889)
controls=(18888 28888)
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/stop_xtimerd.sh"
stop_daemons() {
  for i in 0 1; do stop_xtimerd "$root/node$i/xtimerd.pid"; done
  rm -rf "$rdzv"
}
[[ $keep == 1 ]] || trap stop_daemons EXIT

# The simulated GPU runs at 0.2 bf16 TFLOPS, so that it, not the one CPU that plays every rank's
# host, is the bottleneck, as in real training (see test/e2e/demo_metrics_e2e.py).
export XTIMER_SIM_TFLOPS_BF16=0.2
pids=()
for i in 0 1; do
  "$bin_dir/launcher/xtimer-launch" --run-dir "$root/node$i" --metrics-port "${ports[$i]}" \
    --control-port "${controls[$i]}" --job xtimer-demo -- \
    "$repo/demo/launch.py" --nnodes 2 --nproc-per-node 4 --node-rank "$i" --rdzv-dir "$rdzv" \
    --timeout 300 -- "$bin_dir/test/gpusim/gpusim-run" "$bin_dir/demo/train_step" \
    --tp 2 --pp 2 --dp 2 --layers 4 --hidden 512 --seq 512 --steps 5 --linger 4 \
    > >(if [[ $i == 0 ]]; then tee "$root/node0.out"; else cat > "$root/node1.out"; fi) 2>&1 &
  pids+=($!)
done

# Wait for the ranks to linger, then read both daemons.
for _ in $(seq 600); do
  grep -q lingering "$root/node0.out" 2>/dev/null && break
  sleep 0.2
done
sleep 1.5
echo
echo "== what the two nodes' xtimerd report (curl 127.0.0.1:{18889,28889}/metrics)"
for i in 0 1; do
  curl -s "127.0.0.1:${ports[$i]}/metrics" | awk -v node="$i" '
    function label(s, name,   m) { return match(s, name "=\"[^\"]*\"") ? substr(s, RSTART + length(name) + 2, RLENGTH - length(name) - 3) : "" }
    /^xtimer_rank_up\{/ && $2 == 1 { up = up " " label($1, "rank") }
    /^xtimer_matmul_flop_per_second\{/ { r = label($1, "rank"); f[r] += 0; if ($2 > f[r]) f[r] = $2 }
    /^xtimer_collective_bus_bandwidth_bytes_per_second\{.*operation="AllReduce"/ { r = label($1, "rank"); if ($2 > b[r]) b[r] = $2 }
    /^xtimer_ring_records_written_total\{/ { w += $2 } /^xtimer_ring_records_dropped_total\{/ { d += $2 }
    END {
      printf "node %d: ranks up:%s; records written %d, dropped %d\n", node, up, w, d
      for (r in f) printf "  rank %s: matmul %.3f TFLOPS (bf16; configured 0.2), DP all-reduce bus bandwidth %.1f GB/s (model: 5 us + bytes / 150 GB/s; waiting for peers included)\n", r, f[r] / 1e12, b[r] / 1e9
    }' | sort
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=$?; done
cat "$root/node1.out" | grep -E "launch:" || true
exit "$status"

#!/usr/bin/env bash
# nccl_tests_check.sh NCCL_TESTS_BUILD_DIR [GPUS...]: runs NVIDIA nccl-tests' all_reduce_perf -g N
# (default N = 2 and 4, one process driving N devices) under xtimer-launch on the GPU simulator
# and compares, per rank, xtimer's AllReduce count and bus bandwidth with nccl-tests' own figure.
# nccl-tests is not part of this repository: build it unmodified against /usr/local/cuda first
# (docs/ranks.md says how). Exits 1 when a rank is missing, counts differ, or a bandwidth is off
# by more than 5 %.
set -euo pipefail
case "${1:-}" in
  -h|--help|"") sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; [[ -n "${1:-}" ]]; exit $? ;;
  --version) cat "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../VERSION"; exit 0 ;;
esac
perf="$1/all_reduce_perf"
shift
[[ -x "$perf" ]] || { echo "nccl_tests_check: $perf not found (build nccl-tests first)" >&2; exit 2; }
gpus=("$@")
[[ ${#gpus[@]} -gt 0 ]] || gpus=(2 4)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$repo/bazel-bin"
for f in launcher/xtimer-launch daemon/xtimerd hook/libxtimer.so test/gpusim/gpusim-run; do
  [[ -e "$bin/$f" ]] || { echo "nccl_tests_check: $bin/$f is missing (bazel build //... first)" >&2; exit 2; }
done
source "$repo/demo/stop_xtimerd.sh"
# A link slow enough (0.05 GB/s) that the transfer, not the host, paces every iteration.
export XTIMER_SIM_INTRA_BW_GBPS=0.05 XTIMER_SIM_INTER_BW_GBPS=0.05
status=0
for g in "${gpus[@]}"; do
  work="$(mktemp -d)"
  read -r mport cport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
  echo "== all_reduce_perf -g $g (metrics :$mport)" >&2
  "$bin/launcher/xtimer-launch" --run-dir "$work/run" --metrics-port "$mport" --control-port "$cport" \
    --job "nccl-tests-g$g" -- "$bin/test/gpusim/gpusim-run" "$perf" -g "$g" -b 1M -e 1M -n 40 -w 2 \
    > "$work/out.txt" 2>&1 || { cat "$work/out.txt" >&2; status=1; }
  curl -s "http://127.0.0.1:$mport/metrics" > "$work/metrics.txt"
  stop_xtimerd "$work/run/xtimerd.pid"
  python3 - "$g" "$work/out.txt" "$work/metrics.txt" <<'EOF' || status=1
import re, sys
g, out, metrics = int(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()
m = re.search(r"Avg bus bandwidth\s*:\s*([0-9.]+)", out)
if not m:
    sys.exit("no 'Avg bus bandwidth' line in nccl-tests' output:\n" + out)
theirs = float(m.group(1))
def series(name):
    rows = {}
    for line in metrics.splitlines():
        if line.startswith(name + "{") and 'operation="AllReduce"' in line:
            rank = int(re.search(r'\brank="(-?\d+)"', line).group(1))
            rows[rank] = rows.get(rank, 0) + float(line.rsplit(" ", 1)[1])
    return rows
counts = series("xtimer_ops_total")
bw = series("xtimer_collective_bus_bandwidth_bytes_per_second")
print("nccl-tests busbw %.4f GB/s; xtimer per rank: %s" % (theirs, ", ".join(
    "rank %d: %d AllReduce, %.4f GB/s" % (r, counts[r], bw.get(r, 0) / 1e9) for r in sorted(counts))))
bad = []
if sorted(counts) != list(range(g)):
    bad.append("ranks %s, want 0..%d" % (sorted(counts), g - 1))
if len(set(counts.values())) != 1:
    bad.append("AllReduce counts differ across ranks")
bad += ["rank %d bus bandwidth %.4f GB/s is not within 5%% of %.4f" % (r, v / 1e9, theirs)
        for r, v in bw.items() if abs(v / 1e9 - theirs) > 0.05 * theirs]
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("OK: -g %d" % g)
EOF
  rm -rf "$work"
done
exit $status

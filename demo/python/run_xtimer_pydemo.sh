#!/usr/bin/env bash
# run_xtimer_pydemo.sh [--bin-dir DIR] [--python PATH] [--ranks N] [--steps N]
#                      [--metrics-port N] [--control-port N] [--keep-daemon]
#
# The Python demo job (demo/python/pydemo.py) observed by xtimer: N ranks (default 4) of
# pydemo.py, run by PATH (default /usr/bin/python3), started by demo/launch.py on the GPU
# simulator under `xtimer-launch`, which starts an xtimerd for a fresh run directory (metrics on
# 127.0.0.1:18889, control port 18888 unless changed). pydemo.py loads its CUDA/NCCL module and,
# after step 3, its cuBLAS module with ctypes (dlopen RTLD_LOCAL); under CPython 3.11 it also
# imports its extension module with importlib (--ext). XTIMER_KERNEL_FILTER=Pydemo
# selects its two kernels. While the ranks linger after their last step, the script prints what
# the daemon's /metrics report for each rank: kernels, collectives, GEMMs and device-to-device
# copies (the extension module's). The daemon is
# stopped at the end unless --keep-daemon. Needs //demo/python:libs, //demo:launch,
# //test/gpusim:gpusim-run, //launcher:xtimer-launch, //daemon:xtimerd and //hook:libxtimer.so
# built under DIR (default: the repository's bazel-bin). Exit status: the job's. See docs/demo.md.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin_dir="$repo/bazel-bin"
python=/usr/bin/python3
ranks=4
steps=6
metrics_port=18889
control_port=18888
keep=0
need_value() { [[ $# -ge 2 ]] || { echo "run_xtimer_pydemo.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) need_value "$@"; bin_dir="$2"; shift 2 ;;
    --python) need_value "$@"; python="$2"; shift 2 ;;
    --ranks) need_value "$@"; ranks="$2"; shift 2 ;;
    --steps) need_value "$@"; steps="$2"; shift 2 ;;
    --metrics-port) need_value "$@"; metrics_port="$2"; shift 2 ;;
    --control-port) need_value "$@"; control_port="$2"; shift 2 ;;
    --keep-daemon) keep=1; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat "$repo/VERSION"; exit 0 ;;
    *) echo "run_xtimer_pydemo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$ranks" "$steps" "$metrics_port" "$control_port"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "run_xtimer_pydemo.sh: $v is not a positive integer" >&2; exit 2; }
done
[[ -x "$python" ]] || { echo "run_xtimer_pydemo.sh: $python is not an executable Python" >&2; exit 2; }
for f in demo/python/libpydemo_core.so demo/python/libpydemo_gemm.so test/gpusim/gpusim-run \
         launcher/xtimer-launch daemon/xtimerd hook/libxtimer.so; do
  [[ -e "$bin_dir/$f" ]] || { echo "run_xtimer_pydemo.sh: $bin_dir/$f is missing (build it first)" >&2; exit 2; }
done

ext=()
if "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then ext=(--ext); fi

run_dir="$(mktemp -d /tmp/xtimer-pydemo.XXXXXX)"
out="$run_dir/job.out"
source "$repo/demo/stop_xtimerd.sh"
stop_daemon() {
  stop_xtimerd "$run_dir/xtimerd.pid"
  rm -rf "$run_dir"
}
if [[ $keep == 1 ]]; then
  echo "run_xtimer_pydemo.sh: daemon run directory $run_dir (kept)"
else
  trap stop_daemon EXIT
fi

export XTIMER_KERNEL_FILTER=Pydemo
"$bin_dir/launcher/xtimer-launch" --run-dir "$run_dir" --metrics-port "$metrics_port" \
  --control-port "$control_port" --job xtimer-pydemo -- \
  "$python" "$repo/demo/launch.py" --nproc "$ranks" --timeout 300 -- \
  "$bin_dir/test/gpusim/gpusim-run" "$python" "$repo/demo/python/pydemo.py" \
  --lib-dir "$bin_dir/demo/python" --steps "$steps" --linger 4 ${ext[@]+"${ext[@]}"} \
  > >(tee "$out") 2>&1 &
job=$!

# Wait until every rank lingers, then until the daemon has every rank's last GEMMs (the pollers
# hand records over within milliseconds; the daemon reads them in cycles).
for _ in $(seq 1500); do
  [[ $(grep -c 'pydemo: lingering' "$out" 2>/dev/null) -ge $ranks ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.2
done
summary() {
  curl -s "127.0.0.1:$metrics_port/metrics" | awk '
    function label(s, name,   m) { return match(s, name "=\"[^\"]*\"") ? substr(s, RSTART + length(name) + 2, RLENGTH - length(name) - 3) : "" }
    /^xtimer_ops_total\{/ && /job="xtimer-pydemo"/ {
      r = label($1, "rank"); k = label($1, "kind"); op = label($1, "operation")
      if (k == "kernel") kern[r] += $2
      else if (k == "collective") coll[r] = coll[r] " " op "=" $2
      else if (k == "matmul") mm[r] = mm[r] " " op "=" $2
      else if (op == "MemcpyDtoD") d2d[r] += $2
      ranks[r] = 1
    }
    END { for (r in ranks) printf "rank %s: kernels %d; collectives%s; GEMMs%s; device-to-device copies %d\n", r, kern[r], coll[r], mm[r], d2d[r] }' | sort -n -k2
}
for _ in $(seq 50); do
  [[ $(summary | grep -c 'Sgemm') -ge $ranks ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.2
done
echo
echo "== what xtimerd reports (curl 127.0.0.1:$metrics_port/metrics, xtimer_ops_total per rank)"
summary
status=0
wait "$job" || status=$?
exit "$status"

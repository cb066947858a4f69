#!/usr/bin/env bash
# run_xtimer_demo.sh [--fault KIND | --healthy] [--rank R] [--keep] [--python] [options]
#
# The demo: a training-like job (demo/diag_job, 8 ranks tp2-pp2-dp2) on 2 emulated nodes of the
# GPU simulator, each node's launcher under its own `xtimer-launch`, so each node gets its own
# xtimerd (metrics on 127.0.0.1:18889 and :28889, control on :18888 and :28888, run directories
# ROOT/node0 and ROOT/node1, one dump root ROOT/dumps as on shared storage). One rank carries an
# injected problem; xtimer's diagnosis (`xtimer analyze`, live and on the dump) finds it. At the
# end the demo prints what each node's daemon reports, per rank, and "what xtimer found": the
# verdict, observed vs true bus bandwidth, what xtimer cost the job, and where the Perfetto
# trace, the HTML report and the metrics are. docs/demo.md describes every line.
#
#   --fault KIND        slow-loader (the default: a rank's data loading is slower than its GPU
#                       work), slow-compute, slow-link, hang, crash, mismatch
#   --healthy           no fault: xtimer reports no problem
#   --rank R            the rank the fault strikes (default per fault: 2, 5, 4, 5, 3, 6)
#   --keep              leave the daemons running (and a hung job hanging) to explore them
#   --python            the Python demo job (demo/python/run_xtimer_pydemo.sh) instead
#   --bin-dir DIR       where the programs are built (default: the repository's bazel-bin)
#   --root DIR          run directories, dumps and logs (default /tmp/xtimer-demo)
#   --metrics-ports A,B, --control-ports A,B   the two daemons' ports
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
bin_dir="$here/../bazel-bin"
root=/tmp/xtimer-demo
fault=slow-loader
rank=""
keep=0
python=0
metrics_ports=18889,28889
control_ports=18888,28888
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run_xtimer_demo.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fault) fault="${2:-}"; shift 2 || die "--fault needs a KIND" ;;
    --healthy) fault=healthy; shift ;;
    --rank) rank="${2:-}"; shift 2 || die "--rank needs a rank" ;;
    --keep|--keep-daemons) keep=1; shift ;;
    --python) python=1; shift ;;
    --bin-dir) bin_dir="${2:-}"; shift 2 || die "--bin-dir needs a directory" ;;
    --root) root="${2:-}"; shift 2 || die "--root needs a directory" ;;
    --metrics-ports) metrics_ports="${2:-}"; shift 2 || die "--metrics-ports needs A,B" ;;
    --control-ports) control_ports="${2:-}"; shift 2 || die "--control-ports needs A,B" ;;
    -h|--help) usage; exit 0 ;;
    --version) cat "$here/../VERSION"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
IFS=, read -r -a mports <<<"$metrics_ports"
IFS=, read -r -a cports <<<"$control_ports"
[[ ${#mports[@]} == 2 && ${#cports[@]} == 2 ]] || die "--metrics-ports and --control-ports take two ports each"
if [[ $python == 1 ]]; then  # the Python job observed by one daemon (docs/demo.md)
  [[ $fault == slow-loader && -z "$rank" ]] || die "--python runs the Python job as it is: no --fault, --healthy or --rank"
  opts=(--bin-dir "$bin_dir" --metrics-port "${mports[0]}" --control-port "${cports[0]}")
  [[ $keep == 1 ]] && opts+=(--keep-daemon)
  exec "$here/python/run_xtimer_pydemo.sh" "${opts[@]}"
fi
for f in demo/diag_job test/gpusim/gpusim-run launcher/xtimer-launch daemon/xtimerd hook/libxtimer.so cli/xtimer; do
  [[ -e "$bin_dir/$f" ]] || die "$bin_dir/$f is missing (build it first: tools/dev.sh build)"
done
bin_dir="$(cd "$bin_dir" && pwd)"
xtimer="$bin_dir/cli/xtimer"
export XTIMER_GPUSIM_LIBDIR="${XTIMER_GPUSIM_LIBDIR:-$bin_dir/test/gpusim}"

# The job: 8 ranks, tp2-pp2-dp2 (Megatron order), 4 per emulated node. The simulated GPUs run
# bf16 GEMMs at 100 TFLOPS, so that a step's 8 GEMMs of 8192^3 take 88 ms: the GPU, not the
# simulator's host work, sets the pace, as in real training. Links: 4 GB/s inside a node, 2 GB/s
# between the nodes, no latency (test/e2e/diag_cluster.py uses the same).
job=xtimer-demo
groups=tp2-pp2-dp2
export XTIMER_SIM_TFLOPS_BF16=100 XTIMER_SIM_INTRA_BW_GBPS=4 XTIMER_SIM_INTER_BW_GBPS=2
export XTIMER_SIM_INTRA_LAT_US=0 XTIMER_SIM_INTER_LAT_US=0
steps=60
fault_step=20
flags=()
kind=straggler
case "$fault" in
  healthy) what="no fault: a healthy job" ;;
  slow-loader)
    rank=${rank:-2}; flags=(--host-gap "$rank:256")
    what="rank $rank's data loader (LoadBatch) takes 256 ms per step, longer than the 176 ms of GPU work a step has (diag_job --host-gap $rank:256)" ;;
  slow-compute)
    rank=${rank:-5}; flags=(--compute-factor "$rank:1.5")
    what="rank $rank's GEMMs do 1.5x the work of its peers' (diag_job --compute-factor $rank:1.5)" ;;
  slow-link)
    rank=${rank:-4}; export XTIMER_SIM_SLOW_NIC="$rank:4"
    what="rank $rank's network between the nodes is 4x slow, a degraded NIC (XTIMER_SIM_SLOW_NIC=$rank:4)" ;;
  hang)
    rank=${rank:-5}; kind=hang; flags=(--stop-before-dp-allreduce "$rank:$fault_step")
    what="rank $rank stops in host code before its DP all-reduce of step $fault_step (diag_job --stop-before-dp-allreduce $rank:$fault_step)" ;;
  crash)
    rank=${rank:-3}; kind=hang; flags=(--crash "$rank:$fault_step")
    what="rank $rank dies of SIGSEGV before its first all-reduce of step $fault_step (diag_job --crash $rank:$fault_step)" ;;
  mismatch)
    rank=${rank:-6}; kind=hang; flags=(--mismatch-op "$rank:$fault_step")
    what="rank $rank calls ncclAllGather where its peers call the loss ncclAllReduce of step $fault_step (diag_job --mismatch-op $rank:$fault_step)" ;;
  *) die "unknown fault '$fault' (slow-loader, slow-compute, slow-link, hang, crash, mismatch)" ;;
esac
[[ -z "$rank" || "$rank" =~ ^[0-7]$ ]] || die "--rank takes a rank of the job, 0 to 7"
[[ $kind == hang ]] && steps=1000

grace=5
[[ $kind == hang ]] && grace=600  # the crashed rank's peers stay, hung, as without a launcher

source "$here/stop_xtimerd.sh"
hosts="127.0.0.1:${cports[0]},127.0.0.1:${cports[1]}"
logs="$root/logs"
dumps="$root/dumps"
launchers=()

fail() {
  echo "run_xtimer_demo.sh: $*" >&2
  for i in 0 1; do [[ -f "$logs/node$i.log" ]] && tail -n 5 "$logs/node$i.log" | sed "s/^/  node $i: /" >&2; done
  exit 1
}
job_alive() {
  local p
  for p in "${launchers[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds; fails after SECONDS, or when the job
# has ended and CMD still fails.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@"; do
    job_alive || "$@" || fail "the job ended before $what"
    (( SECONDS < deadline )) || fail "$what: not within $((deadline - SECONDS)) s"
    sleep 0.2
  done
}
stop_job() {
  local p
  for p in "${launchers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${launchers[@]}"; do wait "$p" 2>/dev/null || true; done
}
cleanup() {
  [[ $keep == 1 ]] && return
  stop_job
  for i in 0 1; do stop_xtimerd "$root/node$i/xtimerd.pid"; done
}

# Each node: its own xtimerd (started by xtimer-launch), its launcher of 4 ranks. The daemons
# share one dump root, as nodes share storage, so both nodes' files of a dump land in one folder.
start_job() {
  for i in 0 1; do stop_xtimerd "$root/node$i/xtimerd.pid"; done  # a --keep run's
  rm -rf "$root/node0" "$root/node1" "$root/rdzv" "$dumps" "$logs"
  mkdir -p "$dumps" "$logs"
  for i in 0 1; do
    XTIMER_HOST="node$i" XTIMER_DUMP_ROOT="$dumps" XTIMER_HANG_TIMEOUT=60 \
      "$bin_dir/launcher/xtimer-launch" --run-dir "$root/node$i" --metrics-port "${mports[$i]}" \
      --control-port "${cports[$i]}" --lib "$bin_dir/hook/libxtimer.so" \
      --daemon "$bin_dir/daemon/xtimerd" --job "$job" -- \
      "$here/launch.py" --nnodes 2 --nproc-per-node 4 --node-rank "$i" --rdzv-dir "$root/rdzv" \
      --timeout 600 --grace "$grace" -- "$bin_dir/test/gpusim/gpusim-run" "$bin_dir/demo/diag_job" \
      --steps "$steps" ${flags[@]+"${flags[@]}"} >"$logs/node$i.log" 2>&1 &
    launchers+=($!)
  done
}

# The daemons' metrics and their live diagnosis (xtimer analyze --hosts), into $out.
scrape() {
  for i in 0 1; do
    curl -sf "127.0.0.1:${mports[$i]}/metrics" >"$out/metrics-node$i.txt" || fail "curl 127.0.0.1:${mports[$i]}/metrics failed"
  done
  "$xtimer" analyze --hosts "$hosts" --job "$job" --groups "$groups" --json -q >"$out/live.json" \
    2>>"$logs/xtimer.log" || [[ $? == 3 ]] || fail "xtimer analyze --hosts failed (see $logs/xtimer.log)"
}

# A straggler (or healthy) run: scrape at mid-run, let the job finish, dump every rank's history.
run_to_end() {
  local half=$((steps / 2)) p status=0
  wait_for "step $half" 600 grep -q "^\[rank 0\] step $half/" "$logs/node0.log"
  out="$dumps/run/$job"
  mkdir -p "$out"
  scrape
  echo "   step $half/$steps: read both daemons' /metrics and their live diagnosis (xtimer analyze --hosts)"
  for p in "${launchers[@]}"; do wait "$p" || status=$?; done
  launchers=()
  [[ $status == 0 ]] || fail "the job failed (exit status $status; logs in $logs)"
  job_s=$((SECONDS - t0))
  "$xtimer" dump --hosts "$hosts" --path run --history 100000 --job "$job" --delay 0 \
    >>"$logs/xtimer.log" 2>&1 || fail "xtimer dump failed (see $logs/xtimer.log)"
  echo "   the job ended after ${job_s} s; every rank's history dumped: xtimer dump --hosts $hosts --path run --history 100000"
}

# The automatic dump of a hang, complete on both nodes: each daemon logs "stacks of N of M ranks
# written" once it has written the timelines, the summary and the stacks (docs/daemon.md).
hang_dump_ready() {
  local i d
  for i in 0 1; do grep -qs "hang in job $job: stacks of .* written" "$root/node$i/xtimerd.log" || return 1; done
  for d in "$dumps"/hang-*/"$job"; do out=$d; done
  [[ -n "${out:-}" ]]
}
run_to_hang() {
  wait_for "xtimer's automatic hang dump" 300 hang_dump_ready
  job_s=$((SECONDS - t0))
  echo "   after ${job_s} s: both daemons judged a hang and wrote the automatic dump (timelines, stacks, summaries) to $out"
  scrape
}

analyze_dump() {
  "$xtimer" analyze "$out" --groups "$groups" --json -q >"$out/analysis.json" 2>>"$logs/xtimer.log" \
    || [[ $? == 3 ]] || fail "xtimer analyze $out failed (see $logs/xtimer.log)"
  "$xtimer" analyze "$out" --groups "$groups" -q >"$out/analysis.txt" 2>&1 || true
  if [[ $kind == hang ]]; then
    "$xtimer" stacks "$out" -o "$out/stacks" --groups "$groups" --json -q >"$out/stacks.json" \
      2>>"$logs/xtimer.log" || [[ $? == 3 ]] || fail "xtimer stacks $out failed (see $logs/xtimer.log)"
  fi
  "$xtimer" timeline "$out" -o "$out/trace.pftrace" --groups "$groups" -q 2>>"$logs/xtimer.log" \
    || [[ $? == 3 ]] || fail "xtimer timeline $out failed (see $logs/xtimer.log)"
  "$xtimer" report "$out" -o "$out/report.html" --groups "$groups" -q 2>>"$logs/xtimer.log" \
    || [[ $? == 3 ]] || fail "xtimer report $out failed (see $logs/xtimer.log)"
  for i in 0 1; do curl -sf "127.0.0.1:${mports[$i]}/metrics" >"$out/metrics-end-node$i.txt" || true; done
}

main() {
  trap cleanup EXIT
  echo "== xtimer demo: job $job, 8 ranks ($groups) of demo/diag_job on 2 emulated nodes (GPU simulator)"
  echo "   injected: $what"
  echo "   node 0: xtimerd metrics 127.0.0.1:${mports[0]}, control :${cports[0]}; node 1: :${mports[1]}, :${cports[1]}; job output in $logs"
  t0=$SECONDS
  start_job
  if [[ $kind == hang ]]; then run_to_hang; else run_to_end; fi
  analyze_dump
  python3 "$here/demo_findings.py" --dir "$out" --groups "$groups" --job "$job" \
    --metrics-ports "$metrics_ports" --control-ports "$control_ports" --job-seconds "$job_s" \
    --xtimer "$xtimer" --keep "$keep"
  if [[ $keep == 1 ]]; then
    echo
    echo "The daemons keep running (--keep); stop them with: kill \$(cat $root/node0/xtimerd.pid $root/node1/xtimerd.pid)"
    job_alive && echo "The hung job too; stop it with: kill ${launchers[*]}"
  fi
  return 0
}

main

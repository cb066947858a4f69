#!/usr/bin/env bash
# run_demo.sh [--bin-dir DIR] [LAUNCH_OPTIONS...] [-- TRAIN_STEP_FLAGS...]
#
# Runs the demo training job on the GPU simulator: 8 ranks on 2 emulated nodes, tp2-pp2-dp2, a
# few steps, through demo/launch.py and test/gpusim/gpusim-run. Builds nothing: it needs
# //demo:train_step, //demo:launch and //test/gpusim:gpusim-run built, and finds them
#   - in the runfiles when started with `bazel run //demo:run_demo`,
#   - else under --bin-dir DIR (or $XTIMER_DEMO_BIN_DIR): a bazel-bin directory,
#   - else in bazel-bin at the repository root.
# Options before '--' go to the launcher (e.g. --crash-step 3:2, --slow-rank 5:3, --timeout 60);
# flags after '--' are appended to train_step's (later flags win, e.g. -- --steps 10).
# Set XTIMER_DEMO_REAL_GPU=1 to run the same job on real GPUs (no simulator).
# Exit status: the launcher's (0 when every rank passed its checks). See docs/demo.md.
set -euo pipefail

usage() { sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }

bin_dir="${XTIMER_DEMO_BIN_DIR:-}"
launch_opts=()
step_flags=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --version) cat "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../VERSION"; exit 0 ;;
    --bin-dir) [[ $# -ge 2 ]] || { echo "run_demo.sh: --bin-dir needs a directory" >&2; exit 2; }
               bin_dir="$2"; shift 2 ;;
    --bin-dir=*) bin_dir="${1#--bin-dir=}"; shift ;;
    --) shift; step_flags=("$@"); break ;;
    *) launch_opts+=("$1"); shift ;;
  esac
done

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
runfiles="${RUNFILES_DIR:-}"
if [[ -z "$runfiles" && -d "$0.runfiles" ]]; then runfiles="$0.runfiles"; fi

if [[ -z "$bin_dir" && -n "$runfiles" && -e "$runfiles/xtimer/demo/train_step" ]]; then
  root="$runfiles/xtimer"  # bazel run: binaries, libraries and scripts side by side
  train_step="$root/demo/train_step"
  launch="$root/demo/launch"
  gpusim_run="$root/test/gpusim/gpusim-run"
  libdir="$root/test/gpusim"
else
  repo="$(cd "$script_dir/.." && pwd)"
  bin_dir="${bin_dir:-$repo/bazel-bin}"
  train_step="$bin_dir/demo/train_step"
  launch="$repo/demo/launch.py"
  gpusim_run="$bin_dir/test/gpusim/gpusim-run"
  [[ -x "$gpusim_run" ]] || gpusim_run="$repo/test/gpusim/gpusim-run.sh"
  libdir="$bin_dir/test/gpusim"
fi

for f in "$train_step" "$launch"; do
  if [[ ! -x "$f" ]]; then
    echo "run_demo.sh: $f is missing: build //demo:train_step //demo:launch //test/gpusim:gpusim-run" \
         "first, or pass --bin-dir DIR (a bazel-bin directory)" >&2
    exit 2
  fi
done

wrap=()
if [[ "${XTIMER_DEMO_REAL_GPU:-0}" == "0" ]]; then
  if [[ ! -e "$libdir/libcudart.so.13" ]]; then
    echo "run_demo.sh: no simulator libraries in $libdir: build //test/gpusim:gpusim-run first" >&2
    exit 2
  fi
  # gpusim-run finds the libraries beside itself; say where they are in case it is the source copy.
  export XTIMER_GPUSIM_LIBDIR="$libdir"
  wrap=("$gpusim_run")
fi

# The job: 4 layers (2 per pipeline stage), hidden 1024, 16 heads, sequence 1024, 2 micro-batches
# of 1 sequence per step. On the simulator the step time is set mostly by the host cost of the
# collectives (kernels and GEMMs are modelled, not run), ~40 NCCL calls per rank and step.
exec "$launch" --nnodes 2 --nproc-per-node 4 --timeout "${XTIMER_DEMO_TIMEOUT:-300}" \
  ${launch_opts[@]+"${launch_opts[@]}"} -- \
  ${wrap[@]+"${wrap[@]}"} "$train_step" --tp 2 --pp 2 --dp 2 --layers 4 --hidden 1024 --heads 16 \
  --seq 1024 --micro-batch 1 --micro-batches 2 --steps 5 ${step_flags[@]+"${step_flags[@]}"}

# Helpers for the demo's sh_tests (sourced; cwd is the runfiles root of the workspace).
set -euo pipefail

TRAIN_STEP="$PWD/demo/train_step"
LAUNCH="$PWD/demo/launch"
GPUSIM_RUN="$PWD/test/gpusim/gpusim-run"
# gpusim-run resolves its own symlink into the source tree; the libraries are in the runfiles.
export XTIMER_GPUSIM_LIBDIR="$PWD/test/gpusim"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "FAIL: $*" >&2
  if [[ -n "${OUT:-}" && -f "$OUT" ]]; then
    echo "---- output ($OUT) ----" >&2
    cat "$OUT" >&2
  fi
  exit 1
}

# run_job OUTFILE [LAUNCH_OPTIONS...] [-- TRAIN_STEP_FLAGS...]: the 8-rank tp2-pp2-dp2 job on 2
# emulated nodes, small shapes; sets RC.
run_job() {
  local out="$1"
  shift
  local opts=() flags=()
  while [[ $# -gt 0 ]]; do
    if [[ "$1" == "--" ]]; then shift; flags=("$@"); break; fi
    opts+=("$1")
    shift
  done
  set +e
  "$LAUNCH" --nnodes 2 --nproc-per-node 4 --grace 3 ${opts[@]+"${opts[@]}"} -- \
    "$GPUSIM_RUN" "$TRAIN_STEP" --tp 2 --pp 2 --dp 2 --layers 4 --hidden 512 --heads 8 --seq 512 \
    --micro-batches 2 --steps 3 ${flags[@]+"${flags[@]}"} >"$out" 2>&1
  RC=$?
  set -e
}

expect_rc() {  # expect_rc WANT WHAT
  [[ "$RC" == "$1" ]] || fail "$2: exit status $RC, expected $1"
}

expect_line() {  # expect_line REGEX WHAT
  grep -Eq -- "$1" "$OUT" || fail "$2: no line matches /$1/"
}

expect_no_line() {  # expect_no_line REGEX WHAT
  if grep -Eq -- "$1" "$OUT"; then fail "$2: unexpected line matching /$1/"; fi
}

#!/usr/bin/env bash
# Bad flags of train_step and of the launcher exit 2 with a clear message; --help exits 0.
source demo/testlib.sh

OUT="$TMP/flags.out"
check() {  # check WANT_RC REGEX WHAT -- CMD...
  local want="$1" regex="$2" what="$3"
  shift 4
  set +e
  "$@" >"$OUT" 2>&1
  RC=$?
  set -e
  expect_rc "$want" "$what"
  expect_line "$regex" "$what"
}

sim=("$GPUSIM_RUN" "$TRAIN_STEP")
check 0 '--micro-batches N' "train_step --help" -- "${sim[@]}" --help
check 2 "^train_step: unknown flag '--bogus' \(see --help\)$" "unknown flag" -- "${sim[@]}" --bogus
check 2 '^train_step: flag --tp needs a value' "missing value" -- "${sim[@]}" --tp
check 2 "^train_step: flag --steps: 'x' is not an integer" "bad value" -- "${sim[@]}" --steps=x
check 2 '^train_step: unexpected argument' "stray argument" -- "${sim[@]}" stray
check 2 'tp\*pp\*dp = 2\*2\*4 = 16 does not equal WORLD_SIZE=8' "layout mismatch" -- \
  env WORLD_SIZE=8 RANK=0 "${sim[@]}" --tp 2 --pp 2 --dp 4
check 2 'is not divisible by --pp' "layers vs pp" -- \
  env WORLD_SIZE=2 RANK=0 "${sim[@]}" --pp 2 --layers 3
check 2 'XTIMER_DEMO_RENDEZVOUS is not set' "no rendezvous directory" -- \
  env -u XTIMER_DEMO_RENDEZVOUS WORLD_SIZE=2 RANK=1 "${sim[@]}"

check 0 '--crash-step R:S' "launch --help" -- "$LAUNCH" --help
check 2 'unrecognized arguments: --bogus' "launch: unknown option" -- "$LAUNCH" --bogus -- true
check 2 'no PROGRAM given' "launch: no program" -- "$LAUNCH" --nproc 2
check 2 'is not divisible by --nnodes' "launch: uneven nodes" -- "$LAUNCH" --nproc 3 --nnodes 2 -- true
check 2 'rank 9 in a fault option is not below --nproc 8' "launch: fault rank" -- \
  "$LAUNCH" --nproc 8 --crash 9:1 -- true
check 2 '--slow-rank expects RANK:FACTOR' "launch: fault syntax" -- \
  "$LAUNCH" --nproc 8 --slow-rank 3 -- true

# A bad flag inside a launched job: every rank exits 2, the launcher reports it and exits 2.
check 2 "^\[rank 0\] train_step: unknown flag '--bogus'" "launched bad flag" -- \
  "$LAUNCH" --nproc 2 -- "${sim[@]}" --bogus
expect_line '^launch: job failed: rank [01] exited with status 2' "launched bad flag"

# Without a GPU and without the simulator, train_step fails cleanly (not a crash).
if [[ ! -e /dev/nvidiactl ]]; then
  check 1 'no usable CUDA device: cudaGetDeviceCount\(\) returned' "no GPU" -- \
    env -u LD_LIBRARY_PATH "$TRAIN_STEP" --steps 1
fi
echo PASS

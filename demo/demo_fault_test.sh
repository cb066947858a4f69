#!/usr/bin/env bash
# Faults injected through the launcher: a crash on one rank makes the launcher exit non-zero naming
# that rank and its signal; an NCCL error on one rank fails the job naming it; a hang on one rank
# hangs its peers until the launcher's --timeout kills the job.
source demo/testlib.sh

# Rank 3 dies with SIGSEGV at its first collective of step 2. (In sanitizer builds of the simulator
# the sanitizer reports the crash and exits 1 or aborts instead, depending on its options.)
OUT="$TMP/crash.out"
run_job "$OUT" --crash-step 3:2 --timeout 120
[[ "$RC" != 0 ]] || fail "crash: exit status 0"
expect_line '^launch: starting 8 ranks .*XTIMER_SIM_CRASH=3:35$' "crash: step 2 is collective 35"
if [[ "$RC" == 139 ]]; then
  expect_line '^launch: rank 3 \(node 0, pid [0-9]+\) was killed by SIGSEGV \(signal 11\)$' "crash"
  expect_line '^launch: job failed: rank 3 was killed by SIGSEGV \(signal 11\) \(first failure\); exit status 139$' "crash"
else
  expect_line '^\[rank 3\] .*(SEGV|null pointer)' "crash under a sanitizer"
  expect_line '^launch: job failed: rank 3 (exited with status [0-9]+|was killed by SIG[A-Z]+ \(signal [0-9]+\)) \(first failure\)' "crash"
fi
expect_line '^\[rank 0\] step 1/3 ' "crash: step 1 completes"
expect_no_line '^\[rank 0\] step 2/3 ' "crash: step 2 cannot complete"

# Rank 6's 5th collective (in step 1) returns an error: the rank exits 1 naming the call and step.
OUT="$TMP/nccl_error.out"
run_job "$OUT" --nccl-error 6:5 --timeout 120
expect_rc 1 "nccl error"
expect_line '^\[rank 6\] train_step: rank 6, step 1: .*nccl[A-Za-z]+\(.*failed' "nccl error message"
expect_line '^launch: job failed: rank 6 exited with status 1' "nccl error"

# Rank 5 stops before its first NCCL call of step 2: the job hangs until --timeout.
OUT="$TMP/hang.out"
run_job "$OUT" --hang-step 5:2 --timeout 15
expect_rc 124 "hang"
expect_line '^launch: timeout: the job ran longer than 15 s; ranks still running: ' "hang"
expect_line '^\[rank 0\] step 1/3 ' "hang: step 1 completes"
echo PASS

#!/usr/bin/env bash
# diag_job's fault flags (docs/demo.md, "The diagnosis job") on 4 ranks (tp2-pp2) on the GPU
# simulator: --crash with each HOW dies as said and the launcher names it; --stop-before-send
# and --stop-before-dp-allreduce stop the rank before its send or DP all-reduce (its peers hang
# until --timeout); the mismatches hang the loss collective (the simulator holds mismatched
# calls); bad values are usage errors (exit 2).
source demo/testlib.sh

DIAG_JOB="$PWD/demo/diag_job"

# diag_job OUTFILE TIMEOUT FLAGS...: 4 ranks, 6 small steps; sets RC.
diag_job() {
  local out="$1" timeout="$2"
  shift 2
  set +e
  "$LAUNCH" --nproc 4 --grace 3 --timeout "$timeout" -- "$GPUSIM_RUN" "$DIAG_JOB" --tp 2 --pp 2 \
    --gemm-dim 256 --steps 6 "$@" >"$out" 2>&1
  RC=$?
  set -e
}

OUT="$TMP/healthy.out"
diag_job "$OUT" 120
expect_rc 0 "healthy"
expect_line '^\[rank 0\] diag_job: done: 6 steps on 4 ranks$' "healthy"

OUT="$TMP/segv.out"
diag_job "$OUT" 120 --crash 1:3
[[ "$RC" != 0 ]] || fail "crash (default segv): exit status 0"
expect_line '^\[rank 1\] diag_job: rank 1 raises SIGSEGV before its TP all-reduce of step 3$' "segv"
# (In sanitizer builds the sanitizer reports the SIGSEGV and exits or aborts instead.)
expect_line '^launch: job failed: rank 1 (was killed by SIG(SEGV|ABRT)|exited with status)' "segv"

OUT="$TMP/kill.out"
diag_job "$OUT" 120 --crash 2:3:kill
expect_line '^\[rank 2\] diag_job: rank 2 raises SIGKILL before its TP all-reduce of step 3$' "kill"
expect_line '^launch: job failed: rank 2 was killed by SIGKILL \(signal 9\) \(first failure\)' "kill"

OUT="$TMP/exit.out"
diag_job "$OUT" 120 --crash 3:1:exit
expect_line '^\[rank 3\] diag_job: rank 3 calls exit\(1\) before its TP all-reduce of step 1$' "exit"
expect_line '^launch: job failed: rank 3 exited with status 1 \(first failure\)' "exit"

# Stage 1 (ranks 2, 3) is the last: its first send is send_backward. Rank 1 queues all of step 2
# up to its DP all-reduce (its host waits for nothing before step 3), whatever rank 0 does.
OUT="$TMP/send.out"
diag_job "$OUT" 15 --stop-before-send 0:2 --stop-before-send 3:4 --stop-before-dp-allreduce 1:2
expect_rc 124 "stop before send"
expect_line '^\[rank 0\] diag_job: rank 0 stops in host code before its send_forward of step 2$' \
  "stop before send_forward"
expect_line '^\[rank 1\] diag_job: rank 1 stops in host code before its DP all-reduce of step 2$' \
  "stop before the DP all-reduce"
expect_no_line 'rank 3 stops' "step 4 is never reached once rank 0 stopped in step 2"

for fault in "--mismatch-dtype 1:2|rank 1 passes ncclInt32 to the loss all-reduce of step 2 \(its peers ncclFloat32\)" \
             "--mismatch-root 2:2|rank 2 broadcasts the loss from root 1 where its peers name root 0 \(step 2\)"; do
  OUT="$TMP/mismatch.out"
  # shellcheck disable=SC2086
  diag_job "$OUT" 15 ${fault%%|*}
  expect_rc 124 "${fault%%|*} hangs (the simulator holds mismatched calls)"
  expect_line "^\\[rank [0-9]\\] diag_job: ${fault#*|}\$" "${fault%%|*}"
  expect_no_line 'diag_job: done' "${fault%%|*}: the job cannot finish"
done

OUT="$TMP/usage.out"
for bad in "--crash 1:2:boom|flag --crash: '1:2:boom' is not RANK:N\[:segv\|kill\|exit\]" \
           "--crash 1:0|flag --crash: '1:0' is not RANK:N" \
           "--stop-before-send=1:2 --pp 1|--stop-before-send needs --pp 2 or more" \
           "--mismatch-dtype 1|flag --mismatch-dtype: '1' is not RANK:N" \
           "--stop-before-dp-allreduce 1:x|flag --stop-before-dp-allreduce: '1:x' is not RANK:N"; do
  set +e
  # shellcheck disable=SC2086
  "$GPUSIM_RUN" "$DIAG_JOB" ${bad%%|*} >"$OUT" 2>&1
  RC=$?
  set -e
  expect_rc 2 "${bad%%|*}"
  expect_line "^diag_job: ${bad#*|}" "${bad%%|*}"
done
echo PASS

#!/bin/bash
# Issue 20: `xtimer analyze`, `diff` and `timeline` on dumps with one crafted file among good ones
# (world size 2^31-1, rank 2^31-1, negative durations, GEMM m = 2^62, times near INT64_MAX) each
# finish within 5 s, name the file and what is wrong, and exit 3; a file of another job is left
# out and named (exit 3): the job with the most files is read, or the one --job chooses.
set -u
XT=cli/xtimer
W=cli/write_test_job
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
# Runs with a 5 s limit; fails unless it exits `want` and stderr holds `msg`.
expect() {
  local want=$1 msg=$2; shift 2
  timeout 5 "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  [ $rc -ne 124 ] || fail "'$*' ran past 5 s"
  [ $rc -eq $want ] || fail "'$*' exited $rc, want $want: $(head -c 2000 "$TMP/err")"
  grep -qF -- "$msg" "$TMP/err" || fail "'$*': stderr lacks '$msg': $(head -c 2000 "$TMP/err")"
}

$W "$TMP/good" >/dev/null || fail "write the good job"
check() {  # craft, the message every command must print
  local craft=$1 msg=$2
  $W "$TMP/$craft" --craft "$craft" --craft-rank 3 >/dev/null || fail "write $craft"
  local file="$TMP/$craft/node0/00003-00008.timeline"
  expect 3 "$file" $XT analyze "$TMP/$craft"
  grep -qF -- "$msg" "$TMP/err" || fail "analyze $craft: $(cat "$TMP/err")"
  expect 3 "$msg" $XT analyze "$TMP/$craft" --json --out "$TMP/$craft.json"
  [ "$(stat -c %s "$TMP/$craft.json")" -lt 100000 ] || fail "analyze $craft: a large report"
  expect 3 "$msg" $XT diff "$TMP/good" "$TMP/$craft"
  expect 3 "$msg" $XT timeline "$TMP/$craft" -o "$TMP/$craft.pftrace"
}
check world "world_size 2147483647 is outside [-1, 1048576]"
check rank "rank 2147483647 is outside [-1, 7]"
check duration "40 events out of range left out (first: block 0 event 0: duration_ns -5 is negative)"
check shape "m 4611686018427387904 is outside [0, 2147483647]"
check time "gpu_start_ns 9223372036854774807 is outside [0, 4611686018427387903]"

# Files that disagree about the job: never merged.
$W "$TMP/job" --craft job --craft-rank 3 >/dev/null || fail "write job"
expect 3 "read 'testjob' (most files); left out 1 file(s) of the others" $XT analyze "$TMP/job"
grep -qF "'othertestjob': 1 file" "$TMP/err" || fail "analyze: the other job is not listed: $(cat "$TMP/err")"
expect 3 "'othertestjob': 1 file" $XT timeline "$TMP/job" -o "$TMP/job.pftrace"
expect 3 "'othertestjob': 1 file" $XT diff "$TMP/good" "$TMP/job"
expect 3 "1 rank(s) of the world have no data (3)" $XT analyze "$TMP/job" --job testjob
echo PASS

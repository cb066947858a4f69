#!/usr/bin/env bash
# xtimer-launch's own behaviour, without a daemon: preload, environment, exit status, signals,
# and errors. (Timing under the launcher is tested end to end in test/e2e.)
set -euo pipefail
launch=$1
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
lib="$tmp/libxtimer.so"
: > "$lib"  # only its path matters here: the commands below are not CUDA programs
export XTIMER_RUN_DIR="$tmp/run"
export XTIMER_DUMP_ROOT="$tmp/dumps"  # root's default, /var/lib/xtimer/dumps, is outside the sandbox
fail() { echo "FAIL: $*"; exit 1; }

echo "== preload and environment"
out=$(LD_PRELOAD= "$launch" --no-daemon --lib "$lib" --job myjob -- sh -c 'echo "$LD_PRELOAD|$XTIMER_JOB|$XTIMER_DAEMON_SOCKET"')
[[ "$out" == "$lib|myjob|$tmp/run/xtimerd.sock" ]] || fail "got '$out'"
out=$(LD_PRELOAD=/x/other.so "$launch" --no-daemon --lib "$lib" sh -c 'echo "$LD_PRELOAD"')
[[ "$out" == "/x/other.so:$lib" ]] || fail "preload not appended: '$out'"

echo "== NVTX: libxtimer.so is the injection library; the user's own is forwarded to (docs/hook.md)"
nvtx() { env -u XTIMER_NVTX_FORWARD "$@" "$launch" --no-daemon --lib "$lib" -- sh -c 'echo "$NVTX_INJECTION64_PATH|${XTIMER_NVTX_FORWARD-}"'; }
[[ "$(nvtx -u NVTX_INJECTION64_PATH)" == "$lib|" ]] || fail "NVTX injection not set: '$(nvtx -u NVTX_INJECTION64_PATH)'"
[[ "$(nvtx NVTX_INJECTION64_PATH=/x/nsys.so)" == "$lib|/x/nsys.so" ]] || fail "user's NVTX library not forwarded: '$(nvtx NVTX_INJECTION64_PATH=/x/nsys.so)'"
[[ "$(nvtx NVTX_INJECTION64_PATH=$lib)" == "$lib|" ]] || fail "libxtimer.so forwarded to itself"
echo "== NCCL: XTIMER_NCCL_PROFILER=on makes libxtimer.so NCCL's profiler plugin, unless the user chose one"
prof() { env -u NCCL_PROFILER_PLUGIN -u XTIMER_NCCL_PROFILER "$@" "$launch" --no-daemon --lib "$lib" -- sh -c 'echo "${NCCL_PROFILER_PLUGIN-unset}"'; }
[[ "$(prof)" == "unset" ]] || fail "NCCL profiler plugin set by default: '$(prof)'"
[[ "$(prof XTIMER_NCCL_PROFILER=on)" == "$lib" ]] || fail "NCCL profiler plugin not set: '$(prof XTIMER_NCCL_PROFILER=on)'"
[[ "$(prof XTIMER_NCCL_PROFILER=1 NCCL_PROFILER_PLUGIN=inspector)" == "inspector" ]] || fail "user's NCCL profiler replaced"
[[ "$(prof XTIMER_NCCL_PROFILER=off)" == "unset" ]] || fail "XTIMER_NCCL_PROFILER=off: '$(prof XTIMER_NCCL_PROFILER=off)'"
out=$(XTIMER_NVTX_FORWARD=/x/mine.so NVTX_INJECTION64_PATH=/x/nsys.so "$launch" --no-daemon --lib "$lib" -- sh -c 'echo "$XTIMER_NVTX_FORWARD"')
[[ "$out" == "/x/mine.so" ]] || fail "XTIMER_NVTX_FORWARD replaced: '$out'"

echo "== a job token per launch (docs/security.md); an outer launcher's stays"
tok() { env -u XTIMER_JOB_TOKEN "$@" "$launch" --no-daemon --lib "$lib" -- sh -c 'echo "$XTIMER_JOB_TOKEN"'; }
t1=$(tok); t2=$(tok)
[[ "$t1" =~ ^[0-9a-f]{32}$ ]] || fail "job token: '$t1'"
[[ "$t1" != "$t2" ]] || fail "two launches got the same token"
[[ "$(tok XTIMER_JOB_TOKEN=outer)" == "outer" ]] || fail "an outer launcher's token is replaced"

echo "== the job label (util/job_identity.h): the same for every launcher, no pid in it"
# The test's own environment must not name a job.
clean() {
  env -u XTIMER_JOB -u XTIMER_JOB_DEFAULT -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID -u PMIX_NAMESPACE \
      -u OMPI_MCA_orte_hnp_uri -u PMI_KVSNAME -u PMI_PORT -u JOB_NAME -u KUBERNETES_SERVICE_HOST "$@"
}
job() { clean "$@" "$launch" --no-daemon --lib "$lib" -- sh -c 'echo "$XTIMER_JOB|$XTIMER_JOB_DEFAULT"'; }
out=$(job); [[ "$out" == "|sh" ]] || fail "default job label: '$out'"
[[ "$(job)" == "$out" ]] || fail "default job label differs between runs"
out=$(job TORCHELASTIC_RUN_ID=elastic-7); [[ "$out" == "elastic-7|" ]] || fail "torchrun job id: '$out'"
out=$(job TORCHELASTIC_RUN_ID=none SLURM_JOB_ID=55); [[ "$out" == "slurm-55|" ]] || fail "Slurm: '$out'"
out=$(job PMIX_NAMESPACE=1270808577 OMPI_COMM_WORLD_RANK=2); [[ "$out" == "mpi-1270808577|" ]] \
  || fail "Open MPI: '$out'"
out=$(job XTIMER_JOB='run 1/a'); [[ "$out" == "run_1_a|" ]] || fail "XTIMER_JOB sanitized: '$out'"
out=$(job XTIMER_JOB_DEFAULT=outer); [[ "$out" == "|outer" ]] || fail "an outer launcher's default: '$out'"
out=$(clean "$launch" --no-daemon --lib "$lib" --job 'a b' -- sh -c 'echo "$XTIMER_JOB"')
[[ "$out" == "a_b" ]] || fail "--job sanitized: '$out'"
set +e
clean "$launch" --no-daemon --lib "$lib" --job .. -- true 2> "$tmp/err"; [[ $? == 2 ]] || fail "--job .."
grep -q "leaves no label" "$tmp/err" || fail "--job .. message"
set -e

echo "== exit status and signals pass through"
set +e
"$launch" --no-daemon --lib "$lib" -- sh -c 'exit 7'; [[ $? == 7 ]] || fail "exit 7"
"$launch" --no-daemon --lib "$lib" -- sh -c 'kill -TERM $$'; [[ $? == 143 ]] || fail "SIGTERM status"
"$launch" --no-daemon --lib "$lib" -- sleep 30 & lpid=$!
sleep 0.3; kill -INT $lpid; wait $lpid; st=$?
[[ $st == 130 ]] || fail "SIGINT forwarded: status $st"
"$launch" --no-daemon --lib "$lib" -- /nonexistent/cmd 2> "$tmp/err"; [[ $? == 127 ]] || fail "missing command status"
grep -q "cannot run /nonexistent/cmd" "$tmp/err" || fail "missing command message"

echo "== usage errors"
"$launch" 2> "$tmp/err"; [[ $? == 2 ]] || fail "no command"
grep -q "no command given" "$tmp/err" || fail "no command message"
"$launch" --bogus x 2> "$tmp/err"; [[ $? == 2 ]] || fail "unknown option"
grep -q "unknown option '--bogus'" "$tmp/err" || fail "unknown option message"
"$launch" --metrics-port 99999 --lib "$lib" true 2> "$tmp/err"; [[ $? == 2 ]] || fail "bad port"
"$launch" --lib /nonexistent/libxtimer.so true 2> "$tmp/err"; [[ $? == 2 ]] || fail "missing lib"
grep -q "libxtimer.so not found" "$tmp/err" || fail "missing lib message"
"$launch" --help | grep -q "usage: xtimer-launch" || fail "--help"
"$launch" --help | grep -q "^  --lib PATH" || fail "--help: option lines"
echo "== a missing daemon binary never stops the job"
"$launch" --lib "$lib" --daemon "$tmp/no-xtimerd" -- true 2> "$tmp/err"; [[ $? == 0 ]] || fail "job must run"
set -e
echo PASS

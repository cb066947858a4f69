#!/bin/bash
# xtimer analyze and xtimer diff on dumps written by timeline_io (cli/write_test_job): verdicts,
# JSON, exit statuses and error messages.
set -u
XT=cli/xtimer
W=cli/write_test_job
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { local want=$1; shift; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?; [ $rc -eq $want ] || fail "'$*' exited $rc, want $want: $(cat "$TMP/err")"; }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1': $(head -c 800 "$2")"; }

expect_rc 0 $XT analyze --help
grep -q -- "--groups" "$TMP/out" || fail "analyze help lacks --groups"
expect_rc 0 $XT diff --help
grep -q "impact on step time" "$TMP/out" || fail "diff help"
expect_rc 2 $XT analyze
grep -q "no dump directory" "$TMP/err" || fail "no-input message"
expect_rc 2 $XT diff "$TMP"
grep -q "give two dumps" "$TMP/err" || fail "diff one-dump message"

# A hang: rank 5 stops before the AllReduce of step 15; node1's clock is 3 ms ahead.
$W "$TMP/hang" --stop-rank 5 --stop-step 15 --skew-ns 3000000 >/dev/null || fail "write hang job"
expect_rc 0 $XT analyze "$TMP/hang/node0" "$TMP/hang/node1" --groups tp2-pp2-dp2
grep -q "Hang (never_issued): rank 5 never issued AllReduce seq 15" "$TMP/out" || fail "verdict: $(cat "$TMP/out")"
grep -q "clock offset node1: -0.003000 s" "$TMP/out" || fail "offset: $(cat "$TMP/out")"
# The dump path holding both node folders works too, and --json/--out write the schema.
expect_rc 0 $XT analyze "$TMP/hang" --json --out "$TMP/hang.json"
python3 - "$TMP/hang.json" <<'PY' || fail "hang JSON"
import json, sys
r = json.load(open(sys.argv[1]))
h = r["hang"]
assert h["kind"] == "never_issued" and h["culprit_ranks"] == [5], h
assert sorted(h["waiting_ranks"]) == [0, 1, 2, 3, 4, 6, 7], h
assert h["seq"] == 15 and h["op"] == "AllReduce", h
assert r["stragglers"] == [], r["stragglers"]
assert set(r["clock_offsets_s"]) == {"node0", "node1"}, r["clock_offsets_s"]
PY

# Stacks in the dump (as xtimerd's automatic hang dump writes them): the verdict names the
# culprit's top frames; a file of another rank adds nothing.
cat >"$TMP/hang/node1/00005-00008.stacks" <<'JSON'
{"format": "xtimer-stacks", "version": 1, "job": "j", "rank": 5, "world_size": 8, "pid": 9,
 "capture_time_ns": 1, "process_state": "S",
 "frames": [{"kind": "native", "function": "nanosleep", "module": "/lib/libc.so.6"},
  {"kind": "python", "function": "load_batch", "module": "/job/data.py", "line": 42},
  {"kind": "python", "function": "train_step", "module": "/job/train.py", "line": 80}],
 "threads": [{"tid": 9, "name": "MainThread", "frames": [0, 1, 2]}]}
JSON
sed 's/"rank": 5/"rank": 4/; s/load_batch/elsewhere/' "$TMP/hang/node1/00005-00008.stacks" >"$TMP/hang/node1/00004-00008.stacks"
expect_rc 0 $XT analyze "$TMP/hang"
grep -q "rank 5's stacks: in load_batch (data.py:42) <- train_step (train.py:80) via nanosleep (00005-00008.stacks)" "$TMP/out" || fail "culprit stacks: $(cat "$TMP/out")"
grep -q "elsewhere" "$TMP/out" && fail "a non-culprit's stacks shown: $(cat "$TMP/out")"
rm "$TMP/hang/node1/"*.stacks

# A straggler: rank 3's compute is 1.3x slower.
$W "$TMP/slow" --slow-rank 3 --steps 40 >/dev/null || fail "write straggler job"
expect_rc 0 $XT analyze "$TMP/slow/node0" "$TMP/slow/node1" --json
python3 - "$TMP/out" <<'PY' || fail "straggler JSON: $(head -c 600 "$TMP/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["hang"] is None, r["hang"]
s = r["stragglers"][0]
assert s["rank"] == 3 and s["cause"] == "compute", s
assert r["steps"] == [], r["steps"]  # no marked steps: none reported
PY

# Marked steps (NVTX step ranges in the files' metadata): per-rank statistics in the text and the
# JSON. A step, from one mark's start to the next, lasts the slowest rank's GEMM (2 ms x 1.3 and
# up to 20 us of noise, rank 3) + 1 ms transfer + the 50 us gap: 40 marks, 39 steps.
$W "$TMP/marked" --slow-rank 3 --steps 40 --step-marks 1 >/dev/null || fail "write marked job"
expect_rc 0 $XT analyze "$TMP/marked" --json
python3 - "$TMP/out" <<'PY' || fail "marked steps JSON: $(head -c 600 "$TMP/out")"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
assert [s["rank"] for s in steps] == list(range(8)), steps
for s in steps:
    assert s["count"] == 39, s
    assert abs(s["median_s"] - 0.00366) < 0.00002, s
PY
expect_rc 0 $XT analyze "$TMP/marked"
has "Steps (marked by the job, 8 ranks): median 3.7 ms" "$TMP/out"
has "over 312 steps" "$TMP/out"

# Partial input: one node's directory only -> exit 3 naming the missing ranks.
expect_rc 3 $XT analyze "$TMP/slow/node0"
grep -q "4 rank(s) of the world have no data (4 5 6 7)" "$TMP/err" || fail "missing message: $(cat "$TMP/err")"
# A corrupt file and a missing directory are named; exit 3.
mkdir -p "$TMP/corrupt" && cp -r "$TMP/slow/node0" "$TMP/slow/node1" "$TMP/corrupt/"
printf 'garbage' > "$TMP/corrupt/node1/00007-00008.timeline"
expect_rc 3 $XT analyze "$TMP/corrupt/node0" "$TMP/corrupt/node1" "$TMP/no-such-dir"
grep -q "00007-00008.timeline" "$TMP/err" || fail "corrupt file not named: $(cat "$TMP/err")"
grep -q "no-such-dir: No such file or directory" "$TMP/err" || fail "missing dir not named"
# Nothing readable -> 1.
expect_rc 1 $XT analyze "$TMP/no-such-dir"
grep -q "no readable timeline files" "$TMP/err" || fail "nothing-readable message"
# Bad --groups -> 2, with the reason.
expect_rc 2 $XT analyze "$TMP/slow" --groups tp2-xx4
grep -q -- "--groups must be a layout such as tp2-pp2-dp2 (unknown group 'xx4'" "$TMP/err" || fail "groups parse message: $(cat "$TMP/err")"
expect_rc 2 $XT analyze "$TMP/slow" --groups tp2-pp2
grep -q "describes 4 ranks; the job has 8" "$TMP/err" || fail "groups size message: $(cat "$TMP/err")"
expect_rc 2 $XT analyze "$TMP/slow" --hosts 127.0.0.1:1
grep -q "either dump directories or --hosts" "$TMP/err" || fail "dirs+hosts message"
# No daemon -> 1, explained.
expect_rc 1 $XT analyze --hosts 127.0.0.1:1 --timeout 5
grep -q "nothing accepts connections on 127.0.0.1:1" "$TMP/err" || fail "rpc message: $(cat "$TMP/err")"

# diff: the slowed AllReduce ranks first.
$W "$TMP/a" --steps 10 >/dev/null && $W "$TMP/b" --steps 10 --transfer-factor 2 --gemm-factor 1.05 >/dev/null || fail "write diff jobs"
expect_rc 0 $XT diff "$TMP/a" "$TMP/b"
sed -n 3p "$TMP/out" | grep -q "AllReduce" || fail "diff order: $(cat "$TMP/out")"
expect_rc 0 $XT diff "$TMP/a/node0,$TMP/a/node1" "$TMP/b" --json
python3 - "$TMP/out" <<'PY' || fail "diff JSON: $(cat "$TMP/out")"
import json, sys
r = json.load(open(sys.argv[1]))
ops = r["ops"]
assert [o["op"] for o in ops] == ["AllReduce", "GemmEx"], ops
assert ops[0]["impact_s_per_rank"] > ops[1]["impact_s_per_rank"] > 0, ops
assert ops[0]["b"]["median_s"] > ops[0]["a"]["median_s"], ops[0]
assert abs(ops[0]["change"] - 1.0) < 0.01, ops[0]  # the mean's change: the transfer took 2x
assert r["a"]["ranks"] == 8 and r["b"]["ranks"] == 8, r
# GEMMs +5% on all: every rank's own work grew alike, none stands out
assert len(r["ranks"]) == 8 and not any(k["grew"] for k in r["ranks"]), r["ranks"]
assert all(abs(k["ops"][0]["median_change"] - 0.05) < 0.005 for k in r["ranks"]), r["ranks"]
PY
# diff: one slow rank in a pipeline: its GEMM first with the mean's growth, rank 5 named, the
# send/recv waiting is nobody's slowdown.
$W "$TMP/pa" --steps 10 --pipeline 1 >/dev/null &&
  $W "$TMP/pb" --steps 10 --pipeline 1 --slow-rank 5 --slow-factor 1.5 --noise-seed 1 >/dev/null ||
  fail "write pipeline diff jobs"
expect_rc 0 $XT diff "$TMP/pa" "$TMP/pb"
sed -n 3p "$TMP/out" | grep -q "GemmEx .* +6\.[0-9]%" || fail "diff pipeline order: $(cat "$TMP/out")"
grep -Eq "^  rank 5: own work \+(49|50)\.[0-9]% beyond the other ranks' \(\+[0-9.]+ ms\): GemmEx 4096x4096x4096 mean \+(49|50)\.[0-9]% \(median rank [-+]0\.[0-9]%\)$" "$TMP/out" ||
  fail "diff names rank 5: $(cat "$TMP/out")"
grep -c "^  rank " "$TMP/out" | grep -qx 1 || fail "diff names other ranks: $(cat "$TMP/out")"
expect_rc 0 $XT diff "$TMP/pa" "$TMP/pb" --json
python3 - "$TMP/out" <<'PY' || fail "diff pipeline JSON: $(cat "$TMP/out")"
import json, sys
r = json.load(open(sys.argv[1]))
ops = {o["op"]: o for o in r["ops"]}
assert sorted(ops) == ["AllReduce", "GemmEx", "Send/Recv"], ops
assert ops["Send/Recv"]["a"]["count"] == 80 and abs(ops["Send/Recv"]["change"]) < 0.001, ops
grew = [k for k in r["ranks"] if k["grew"]]
assert [k["rank"] for k in grew] == [5], r["ranks"]
assert grew[0]["ops"][0]["op"] == "GemmEx" and abs(grew[0]["ops"][0]["change"] - 0.5) < 0.01, grew
PY
expect_rc 3 $XT diff "$TMP/a" "$TMP/corrupt"
grep -q "B: .*00007-00008.timeline" "$TMP/err" || fail "diff partial message: $(cat "$TMP/err")"
expect_rc 1 $XT diff "$TMP/a" "$TMP/no-such-dir"
# Two jobs in one input are never merged (cli/readers/job_inputs.h): without --job, analyze, timeline
# and diff read the job with the most files (a tie: the first by name, otherjob), leave the other
# out and exit 3, naming it and asking for --job; --job picks one; a --job that names none fails
# listing the jobs present.
mkdir -p "$TMP/mixed" && $W "$TMP/mixed/other" --steps 10 --job otherjob >/dev/null || fail "write second job"
mkdir -p "$TMP/mixed/testjob" && cp -r "$TMP/a/node0" "$TMP/a/node1" "$TMP/mixed/testjob/"
for cmd in "analyze $TMP/mixed/testjob/node0 $TMP/mixed/testjob/node1 $TMP/mixed/other/node0 $TMP/mixed/other/node1" \
           "timeline $TMP/mixed/testjob/node0 $TMP/mixed/testjob/node1 $TMP/mixed/other -o $TMP/mixed.pftrace" \
           "diff $TMP/a $TMP/mixed/testjob/node0,$TMP/mixed/testjob/node1,$TMP/mixed/other"; do
  expect_rc 3 $XT $cmd
  grep -q "hold 2 jobs" "$TMP/err" || fail "$cmd: no mixed-jobs note: $(cat "$TMP/err")"
  grep -q "read 'otherjob' (most files); left out 8 file(s)" "$TMP/err" || fail "$cmd: chosen job not named: $(cat "$TMP/err")"
  grep -q "'testjob': 8 files in $TMP/mixed/testjob/node0, $TMP/mixed/testjob/node1" "$TMP/err" || fail "$cmd: left-out job not listed: $(cat "$TMP/err")"
  grep -q -- "--job NAME" "$TMP/err" || fail "$cmd: no --job hint: $(cat "$TMP/err")"
  flag=--job && [ "${cmd%% *}" = diff ] && flag=--job-b  # A holds testjob alone
  expect_rc 2 $XT $cmd $flag typo
  grep -q -- "--job 'typo' names none of the 2 job(s)" "$TMP/err" || fail "$cmd $flag typo: $(cat "$TMP/err")"
  grep -q "'otherjob': 8 files in $TMP/mixed/other/node0, $TMP/mixed/other/node1" "$TMP/err" || fail "$cmd $flag typo: jobs not listed: $(cat "$TMP/err")"
done
expect_rc 0 $XT analyze "$TMP/mixed/testjob" "$TMP/mixed/other" --job otherjob --json
python3 - "$TMP/out" <<'PY' || fail "analyze --job: $(head -c 600 "$TMP/out")"
import json, sys
r = json.load(open(sys.argv[1]))
files = r["inputs"]["files"]
assert len(files) == 8 and all("/other/" in f for f in files), files
PY
expect_rc 0 $XT timeline "$TMP/mixed/testjob/node0" "$TMP/mixed/testjob/node1" "$TMP/mixed/other" --job testjob -o "$TMP/mixed.pftrace"
grep -q "wrote .*8 ranks" "$TMP/err" || fail "timeline --job: $(cat "$TMP/err")"
expect_rc 0 $XT diff "$TMP/a" "$TMP/mixed/testjob/node0,$TMP/mixed/testjob/node1,$TMP/mixed/other" --job-b otherjob --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["b"]["ranks"] == 8, r' "$TMP/out" || fail "diff --job-b: $(head -c 300 "$TMP/out")"
expect_rc 2 $XT diff "$TMP/a" "$TMP/mixed/other" --job otherjob
grep -q "A: --job 'otherjob' names none of the 1 job(s)" "$TMP/err" || fail "diff --job for both: $(cat "$TMP/err")"
# Files of one job that disagree about the world size are left out and named (exit 3), never
# used to size the world: a 4-rank run with the same job label beside the 8-rank one.
$W "$TMP/world4" --ranks 4 --nodes 1 --steps 10 >/dev/null || fail "write 4-rank job"
expect_rc 3 $XT analyze "$TMP/a/node0" "$TMP/a/node1" "$TMP/world4/node0" --json
grep -q "world4/node0/00000-00004.timeline: world size 4, but most files of job 'testjob' say 8: left out" "$TMP/err" || fail "world-size message: $(cat "$TMP/err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert len(r["inputs"]["files"]) == 8 and r["inputs"]["missing_ranks"] == [], r["inputs"]' "$TMP/out" || fail "world-size files: $(head -c 600 "$TMP/out")"
expect_rc 3 $XT timeline "$TMP/a/node0" "$TMP/a/node1" "$TMP/world4/node0" -o "$TMP/w.pftrace"
grep -q "00003-00004.timeline: world size 4, but most files of job 'testjob' say 8: left out" "$TMP/err" || fail "timeline world-size message: $(cat "$TMP/err")"
expect_rc 3 $XT diff "$TMP/a" "$TMP/a/node0,$TMP/a/node1,$TMP/world4/node0"
grep -q "B: .*world size 4, but most files" "$TMP/err" || fail "diff world-size message: $(cat "$TMP/err")"
echo PASS

#!/bin/bash
# xtimer stacks end to end on generated inputs (stacktrace/gen_stacks): 8 ranks on 2 nodes, rank
# 3 elsewhere; the folded stacks, the summary (text, JSON, --groups), the SVG (python3's XML
# parser, titles naming ranks), and bad inputs (truncated JSON, huge world, missing ranks).
set -u
XT=cli/xtimer
GEN=stacktrace/gen_stacks
CHECK=stacktrace/svg_check.py
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { local want=$1; shift; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?; [ $rc -eq $want ] || fail "'$*' exited $rc, want $want: $(cat "$TMP/err")"; }

expect_rc 0 $XT stacks --help
grep -q "stacks.folded" "$TMP/out" || fail "help lacks the outputs"
expect_rc 0 $XT stacks --version
expect_rc 2 $XT stacks
grep -q "no input directory" "$TMP/err" || fail "no-input message: $(cat "$TMP/err")"
expect_rc 2 $XT stacks "$TMP"
grep -q "give -o OUT/" "$TMP/err" || fail "no-output message"
expect_rc 2 $XT stacks "$TMP" -o "$TMP/x" --bogus
expect_rc 0 $XT help
grep -q "stacks" "$TMP/out" || fail "xtimer help does not list stacks"
# --hosts (the live capture itself: //daemon/dumps:stack_capture_test): its argument errors, and no
# node answering (a port nothing listens on) is exit 1.
expect_rc 2 $XT stacks "$TMP" --hosts 127.0.0.1:1 -o "$TMP/x"
grep -q "either directories or --hosts" "$TMP/err" || fail "both message: $(cat "$TMP/err")"
expect_rc 2 $XT stacks --hosts 127.0.0.1:1 -o "$TMP/x" --timeout 0
grep -q "seconds in (0, 30\]" "$TMP/err" || fail "timeout message: $(cat "$TMP/err")"
expect_rc 2 $XT stacks --hosts 127.0.0.1:1 -o "$TMP/x" --ranks 1,x
grep -q "'x' is no rank" "$TMP/err" || fail "ranks message: $(cat "$TMP/err")"
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_rc 1 $XT stacks --hosts "127.0.0.1:$DEAD" -o "$TMP/x" --timeout 1
grep -q "no node answered" "$TMP/err" || fail "dead host message: $(cat "$TMP/err")"

$GEN "$TMP/job" --ranks 8 --nodes 2 --threads 3 --frames 8 --outlier 3 || fail "gen_stacks"
expect_rc 0 $XT stacks "$TMP/job" -o "$TMP/out1" --groups tp2-pp2-dp2
grep -qx "ranks 0-2,4-7 (7) in train_step (train.py:88) <- layer_1 (model.py:101) <- main (train.py:120) via ncclAllReduce" \
  "$TMP/out" || fail "majority group: $(cat "$TMP/out")"
grep -q "^rank 3 (1) in load_batch (data.py:42) <- train_step (train.py:80) .*\[outlier; pp stage 0\]$" \
  "$TMP/out" || fail "outlier group: $(cat "$TMP/out")"
cmp -s "$TMP/out" "$TMP/out1/summary.txt" || fail "summary.txt differs from stdout"
grep -q "load_batch (data.py:42) \[rank 3\] 1$" "$TMP/out1/stacks.folded" || fail "folded outlier"
grep -q "ncclAllReduce \[ranks 0-2,4-7\] 7$" "$TMP/out1/stacks.folded" || fail "folded majority"
# flamegraph.pl's grammar: every line is "frame;frame;... COUNT".
grep -qv '^[^;]*\(;[^;]*\)* [0-9][0-9]*$' "$TMP/out1/stacks.folded" && fail "a folded line is malformed"
python3 $CHECK "$TMP/out1/stacks.svg" "7 ranks: 0-2,4-7" "1 rank: 3" "origin: nccl/cuda" \
  || fail "svg check"

# JSON summary.
expect_rc 0 $XT stacks "$TMP/job/node0" "$TMP/job/node1" -o "$TMP/out2" --json
python3 - "$TMP/out" <<'PY' || fail "JSON summary: $(cat "$TMP/out")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["format"] == "xtimer-stacks-summary" and s["ranks"] == 8 and s["world_size"] == 8, s
g = s["groups"]
assert [x["ranks"] for x in g] == [[0, 1, 2, 4, 5, 6, 7], [3]], g
assert g[1]["outlier"] and not g[0]["outlier"], g
assert g[1]["frames"][0]["function"] == "load_batch" and g[1]["frames"][0]["line"] == 42, g
PY

# An outlier set that is exactly one parallel group is named: with tp2, ranks 2-3 form one.
$GEN "$TMP/pair" --ranks 8 --nodes 1 --outlier 3 || fail "gen_stacks"
sed 's/"rank": 3/"rank": 2/; s/"pid": 1003/"pid": 1002/' "$TMP/pair/node0/00003-00008.stacks" \
  >"$TMP/pair/node0/00002-00008.stacks"
expect_rc 0 $XT stacks "$TMP/pair" -o "$TMP/out3" --groups tp2-pp2-dp2
grep -q "^ranks 2-3 (2) in load_batch.*the ranks form one tp group\]$" "$TMP/out" \
  || fail "group naming: $(cat "$TMP/out")"
expect_rc 2 $XT stacks "$TMP/pair" -o "$TMP/out3" --groups tp2-pp2
grep -q "describes 4 ranks; the job has 8" "$TMP/err" || fail "groups size message"

# A file of another job among the job's (issue 20): never merged; the job with the most files is
# read, the other named with the --job hint, exit 3; --job chooses.
cp -r "$TMP/job" "$TMP/mixed"
sed 's/"job": "[^"]*"/"job": "otherjob"/' "$TMP/job/node0/00001-00008.stacks" \
  >"$TMP/mixed/node0/other-00001-00008.stacks"
expect_rc 3 $XT stacks "$TMP/mixed" -o "$TMP/out4"
grep -q "the inputs hold 2 jobs, never merged: read '.*' (most files); left out the files of 'otherjob' (1); choose one with --job NAME" "$TMP/err" \
  || fail "mixed jobs message: $(cat "$TMP/err")"
grep -q "^xtimer stacks: 8 ranks of a world of 8" "$TMP/out" || fail "mixed jobs summary: $(cat "$TMP/out")"
expect_rc 3 $XT stacks "$TMP/mixed" -o "$TMP/out4" --job otherjob --json  # 7 ranks missing
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["ranks"] == 1, r' "$TMP/out" \
  || fail "--job otherjob: $(head -c 300 "$TMP/out")"

# Bad inputs: a truncated file and a huge world are named and skipped; the run is partial (3).
cp -r "$TMP/job" "$TMP/bad"
head -c 300 "$TMP/job/node0/00001-00008.stacks" >"$TMP/bad/node0/00001-00008.stacks"
sed 's/"world_size": 8/"world_size": 99999999/' "$TMP/job/node1/00005-00008.stacks" \
  >"$TMP/bad/node1/00005-00008.stacks"
expect_rc 3 $XT stacks "$TMP/bad" -o "$TMP/out4"
grep -q "00001-00008.stacks: JSON error at byte 300: .*truncated?" "$TMP/err" \
  || fail "truncated message: $(cat "$TMP/err")"
grep -q '00005-00008.stacks: "world_size" is 99999999, outside \[-1, 1048576\]: skipped' "$TMP/err" \
  || fail "huge world message: $(cat "$TMP/err")"
grep -q "^missing: ranks 1,5 (2) have no readable stack file$" "$TMP/out" \
  || fail "missing ranks: $(cat "$TMP/out")"
python3 $CHECK "$TMP/out4/stacks.svg" "6 ranks: 0,2-4,6-7" "5 ranks: 0,2,4,6-7" || fail "partial svg"

# The crafted headers of issue 20 (world 2^31-1, a rank far outside it, a negative rank, a line
# of 2^62, a frame index outside the table), each in one file among good ones: every run ends
# within 5 s (timeout exits 124), exit 3, the file named with its reason.
crafted() {  # crafted NAME SED: node1's rank-5 file edited by SED, the rest as generated
  rm -rf "$TMP/c-$1" && cp -r "$TMP/job" "$TMP/c-$1"
  sed "$2" "$TMP/job/node1/00005-00008.stacks" >"$TMP/c-$1/node1/00005-00008.stacks"
  expect_rc 3 timeout 5 $XT stacks "$TMP/c-$1" -o "$TMP/c-$1-out"
  grep -q "00005-00008.stacks: .*skipped" "$TMP/err" || fail "crafted $1: $(cat "$TMP/err")"
}
crafted world 's/"world_size": 8/"world_size": 2147483647/'
grep -q '"world_size" is 2147483647, outside \[-1, 1048576\]' "$TMP/err" || fail "world 2^31-1: $(cat "$TMP/err")"
crafted rank 's/"rank": 5,/"rank": 2147483646,/'
grep -q '"rank" is 2147483646, outside \[0, 7\]' "$TMP/err" || fail "rank 2^31-2: $(cat "$TMP/err")"
crafted negative 's/"rank": 5,/"rank": -5,/'
crafted line 's/"line": 42/"line": 4611686018427387904/; s/"line": 88/"line": 4611686018427387904/'
crafted index 's/"frames": \[0, /"frames": [2147483647, /'

# Nothing readable: 1. A missing input: named, 1.
echo '{"format": "xtimer-stacks"' >"$TMP/only.stacks"
expect_rc 1 $XT stacks "$TMP/only.stacks" -o "$TMP/out5"
grep -q "no readable stack file" "$TMP/err" || fail "nothing-readable message"
expect_rc 1 $XT stacks "$TMP/nonexistent" -o "$TMP/out5"
grep -q "nonexistent: No such file or directory" "$TMP/err" || fail "missing-input message"
echo PASS

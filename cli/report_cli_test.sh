#!/bin/bash
# xtimer report on dumps written by cli/write_test_job: the straggler and its cause named as
# `xtimer analyze` names them, every section, hostile input escaped, links to a trace and a flame
# graph found in the dump, exit statuses and error messages.
set -u
XT=cli/xtimer
W=cli/write_test_job
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { local want=$1; shift; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?; [ $rc -eq $want ] || fail "'$*' exited $rc, want $want: $(cat "$TMP/err")"; }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1': $(head -c 800 "$2")"; }

expect_rc 0 $XT report --help
has "-o, --out FILE" "$TMP/out"
expect_rc 0 $XT report --version
$XT --version | cmp -s - "$TMP/out" || fail "report --version differs from xtimer --version"
expect_rc 2 $XT report
has "no dump directory" "$TMP/err"
expect_rc 2 $XT report "$TMP"
has "give -o report.html" "$TMP/err"
expect_rc 2 $XT report "$TMP" -o "$TMP/r.html" --bogus
has "unknown option '--bogus'" "$TMP/err"
expect_rc 2 $XT report "$TMP" -o "$TMP/r.html" --top 0
has "--top must be a number" "$TMP/err"

# A straggler (rank 3's GEMM 1.3x slower) in a job whose label is markup.
HOSTILE='<script>alert(1)</script>'
$W "$TMP/slow" --slow-rank 3 --steps 40 --job "$HOSTILE" >/dev/null || fail "write straggler job"
$XT timeline "$TMP/slow" -o "$TMP/slow/trace.pftrace" -q || fail "xtimer timeline"
mkdir -p "$TMP/slow/stacks" "$TMP/html" && echo '<svg/>' >"$TMP/slow/stacks/stacks.svg"
expect_rc 0 $XT report "$TMP/slow" -o "$TMP/html/report.html" --groups tp2-pp2-dp2
R="$TMP/html/report.html"
# One pass over each file's events makes the diagnosis and the op table (cli/readers/file_reads.h).
has "read 8 timeline file(s), 8 pass(es) over their events" "$TMP/err"
$XT analyze "$TMP/slow" --groups tp2-pp2-dp2 >"$TMP/analyze.txt" 2>/dev/null || fail "xtimer analyze"
SENTENCE=$(grep -o "Rank 3 on communicator .*" "$TMP/analyze.txt" | head -1)
[ -n "$SENTENCE" ] || fail "analyze names no straggler: $(cat "$TMP/analyze.txt")"
has "$SENTENCE" "$R"
has "cause compute" "$R"
has "arrived last in 100% of 40 instances" "$R"
has "No hang." "$R"
for section in 'id="diagnosis"' 'id="ranks"' 'id="bandwidth"' 'id="ops"' 'id="links"' \
    "Step time" "Matmul FLOP/s" "<td class=\"l\">GemmEx</td>" "<td class=\"l\">AllReduce</td>"; do
  has "$section" "$R"
done
has '<tr class="hl"><td>3</td>' "$R"
has 'href="../slow/trace.pftrace"' "$R"
has 'href="../slow/stacks/stacks.svg"' "$R"
grep -q "<script" "$R" && fail "markup from the job label reached the HTML"
has "xtimer report: &lt;script&gt;alert(1)&lt;/script&gt;" "$R"
grep -qE "https?://[^w]" "$R" && fail "the report refers to the network"
# The charts' figures are the table's: rank 3's matmul TFLOP/s is the others' / 1.3.
python3 - "$R" <<'PY' || fail "per-rank FLOP/s"
import re, sys
rows = re.findall(r"<tr(?: class=\"hl\")?><td>(\d+)</td><td class=\"l\">[^<]*</td><td>([\d.]+)</td><td class=\"l\">guessed: (\d+) collectives? per step</td><td>([\d.]+)</td>", open(sys.argv[1]).read())
assert len(rows) == 8, rows
f = {int(r): float(t) for r, _, _, t in rows}
others = sorted(v for r, v in f.items() if r != 3)
assert abs(others[3] / f[3] - 1.3) < 0.02, f
steps = [float(s) for _, s, _, _ in rows]
assert max(steps) / min(steps) < 1.01, steps
per_step = {int(n) for _, _, n, _ in rows}
assert len(per_step) == 1 and min(per_step) >= 1, per_step
PY

# A hang: the verdict and its evidence, as analyze prints them, with the culprit's stacks
# named by its application frame (the hook's poller and frames folded away).
$W "$TMP/hang" --stop-rank 5 --stop-step 15 >/dev/null || fail "write hang job"
node=$(dirname "$(find "$TMP/hang" -name '*.timeline' | head -1)")
cat >"$node/00005-00008.stacks" <<'JSON'
{"format": "xtimer-stacks", "version": 1, "job": "testjob", "rank": 5, "world_size": 8, "pid": 9,
 "frames": [{"kind": "native", "function": "clock_nanosleep", "module": "/lib/libc.so.6"},
  {"kind": "native", "function": "xtimer::hook::Poller::Run()", "module": "/opt/libxtimer.so"},
  {"kind": "native", "function": "Worker::Wait(int)", "module": "/job/bin/train", "line": 42,
   "file": "/src/worker.cc"},
  {"kind": "native", "function": "cudaError xtimer::hook::SyncCall<F>(F&&)", "module": "/opt/libxtimer.so"}],
 "threads": [{"tid": 9, "name": "train", "frames": [0, 3, 2]},
  {"tid": 8, "name": "xtimer-poller", "frames": [0, 1]}]}
JSON
expect_rc 0 $XT report "$TMP/hang" -o "$TMP/hang.html" -q
[ -s "$TMP/err" ] && fail "-q printed: $(cat "$TMP/err")"
has "Hang (never_issued): rank 5 never issued AllReduce seq 15" "$TMP/hang.html"
has "s stacks: in Worker::Wait (worker.cc:42) via clock_nanosleep (00005-00008.stacks)" "$TMP/hang.html"
rm "$node/00005-00008.stacks"

# Two jobs (the straggler's and the hang's) are never merged: without --job the one with the
# most files (a tie: the first by name, the straggler's) is reported, exit 3, the other named
# with the --job hint on stderr and in the page; --job picks one.
expect_rc 3 $XT report "$TMP/slow" "$TMP/hang" -o "$TMP/two.html"
has "--job NAME" "$TMP/err"
has "'testjob': 8 files" "$TMP/err"
has "Partial input" "$TMP/two.html"
grep -q "Hang (never_issued)" "$TMP/two.html" && fail "the hang job was merged into the straggler's report"
expect_rc 0 $XT report "$TMP/slow" "$TMP/hang" -o "$TMP/two.html" --job testjob
has "Hang (never_issued): rank 5" "$TMP/two.html"

# Partial input: one node -> written, exit 3, the missing ranks named on stderr and in the page.
expect_rc 3 $XT report "$TMP/slow/node0" -o "$TMP/partial.html"
has "4 rank(s) of the world have no data (4 5 6 7)" "$TMP/err"
has "Partial input" "$TMP/partial.html"
has "4 rank(s) of the world have no data (4 5 6 7)" "$TMP/partial.html"
# Nothing readable -> 1; an output folder that does not exist -> 1, named.
expect_rc 1 $XT report "$TMP/no-such-dir" -o "$TMP/x.html"
has "no readable timeline files" "$TMP/err"
expect_rc 1 $XT report "$TMP/slow" -o "$TMP/no-such-dir/x.html"
has "no-such-dir/x.html" "$TMP/err"
echo PASS

#!/bin/bash
# The xtimer CLI: dispatch, --help, bad arguments (exit 2), a conversion of the golden input.
set -u
XT=cli/xtimer
TMP=${TEST_TMPDIR:-/tmp}
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { local want=$1; shift; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?; [ $rc -eq $want ] || fail "'$*' exited $rc, want $want: $(cat "$TMP/err")"; }

expect_rc 2 $XT
expect_rc 0 $XT --help
grep -q "timeline" "$TMP/out" || fail "help lists no timeline"
expect_rc 2 $XT nosuch
grep -q "unknown command 'nosuch'" "$TMP/err" || fail "unknown command message"
expect_rc 0 $XT timeline --help
grep -q -- "--groups" "$TMP/out" || fail "timeline help lacks --groups"
expect_rc 2 $XT timeline
grep -q "no input directory" "$TMP/err" || fail "no-input message"
expect_rc 2 $XT timeline timeline/testdata/node0
grep -q "no output file" "$TMP/err" || fail "no-output message"
expect_rc 2 $XT timeline timeline/testdata/node0 -o "$TMP/t.pftrace" --jobs 0
grep -q -- "--jobs must be a number" "$TMP/err" || fail "jobs message"
expect_rc 2 $XT timeline timeline/testdata/node0 -o "$TMP/t.pftrace" --compression-level 13
grep -q -- "--compression-level must be a number from 0 to 12, not '13'" "$TMP/err" || fail "level message"
expect_rc 2 $XT timeline timeline/testdata/node0 -o "$TMP/t.pftrace" --compression-level=fast
grep -q -- "--compression-level must be a number" "$TMP/err" || fail "level message (text)"
expect_rc 2 $XT timeline timeline/testdata/node0 -o "$TMP/t.pftrace" --groups tp2-xx4
grep -q "unknown group 'xx4'" "$TMP/err" || fail "groups message"
expect_rc 2 $XT timeline timeline/testdata/node0 -o "$TMP/t.pftrace" --frobnicate
grep -q "unknown option '--frobnicate'" "$TMP/err" || fail "unknown option message"
expect_rc 1 $XT timeline "$TMP/empty-nothing" -o "$TMP/t.pftrace"
grep -q "no readable timeline files" "$TMP/err" || fail "nothing-readable message"

expect_rc 0 $XT timeline timeline/testdata/node0 timeline/testdata/node1 -o "$TMP/t.pftrace" --groups=tp2-pp2-dp2 -j 2
grep -q "clock offset node1: .* ns (relative to node0" "$TMP/err" || fail "offsets not printed: $(cat "$TMP/err")"
grep -q "wrote .*8 ranks" "$TMP/err" || fail "summary missing"
cmp "$TMP/t.pftrace" timeline/testdata/expected.pftrace || fail "CLI output differs from the golden trace"
expect_rc 0 $XT timeline timeline/testdata/node0 timeline/testdata/node1 -o "$TMP/q.pftrace" --quiet
[ -s "$TMP/err" ] && fail "--quiet printed: $(cat "$TMP/err")"
# Uncompressed packets: larger, and a different file (compression is on by default).
expect_rc 0 $XT timeline timeline/testdata/node0 timeline/testdata/node1 -o "$TMP/plain.pftrace" --groups=tp2-pp2-dp2 --no-compress
[ "$(stat -c %s "$TMP/plain.pftrace")" -gt "$(stat -c %s "$TMP/t.pftrace")" ] || fail "--no-compress did not write a larger trace"
expect_rc 0 $XT timeline timeline/testdata/node0 timeline/testdata/node1 -o "$TMP/plain0.pftrace" --groups=tp2-pp2-dp2 --compression-level 0
cmp "$TMP/plain.pftrace" "$TMP/plain0.pftrace" || fail "--no-compress and --compression-level 0 differ"
# Half the ranks: written, but partial (exit 3), with the missing ranks named.
expect_rc 3 $XT timeline timeline/testdata/node0 -o "$TMP/half.pftrace"
grep -q "warning: 4 of 8 ranks have no file (ranks 4 5 6 7)" "$TMP/err" || fail "no missing-ranks warning: $(cat "$TMP/err")"
[ -s "$TMP/half.pftrace" ] || fail "the partial trace was not written"
# A dump path holding job folders (here node0/ and node1/): read folder by folder, and said so.
expect_rc 0 $XT timeline timeline/testdata -o "$TMP/dumppath.pftrace" --groups=tp2-pp2-dp2
grep -q "note: timeline/testdata is a dump path holding job folders; reading 2 of them: node0, node1" "$TMP/err" || fail "no dump-path note: $(cat "$TMP/err")"
cmp "$TMP/dumppath.pftrace" timeline/testdata/expected.pftrace || fail "the dump path gave a different trace"
# Every flag a command's --help lists (generated from the flags it registers) is named on the
# command's page of docs/ (the universal -h/--help and --version aside).
for pair in analyze:analyze-cli diff:analyze-cli report:report stacks:stacks timeline:perfetto \
            dump:control; do
  cmd=${pair%%:*} doc=docs/${pair##*:}.md
  expect_rc 0 $XT "$cmd" --help
  flags=$(sed -n '/^options:/,/^$/p' "$TMP/out" | grep -oE '^  (-[a-z], )?--[a-z-]+(, --[a-z-]+)?' |
          grep -oE -- '--[a-z-]+' | grep -vxE -- '--help|--version')
  [ -n "$flags" ] || fail "$cmd --help lists no flags"
  for f in $flags; do
    grep -qE -- "(^|[^a-z-])$f([^a-z-]|\$)" "$doc" || fail "$cmd's $f is not in $doc"
  done
done
# No line of a command's --help runs past 100 columns (the flags are wrapped at 100).
for cmd in analyze diff report stacks timeline dump; do
  expect_rc 0 $XT "$cmd" --help
  long=$(awk 'length > 100' "$TMP/out")
  [ -z "$long" ] || fail "$cmd --help has lines over 100 columns: $long"
done
# A --groups whose sizes do not multiply to the world size is a usage error (exit 2) everywhere.
expect_rc 2 $XT timeline timeline/testdata/node0 timeline/testdata/node1 -o "$TMP/g.pftrace" --groups tp3-dp2
grep -q -- "--groups tp3-dp2 describes 6 ranks; the job has 8" "$TMP/err" || fail "timeline groups world message: $(cat "$TMP/err")"
expect_rc 0 $XT analyze --help
grep -q -- "--hang-timeout S    the longest stall that is not a hang (default 300;" "$TMP/out" ||
  fail "analyze --help does not show analysis::Options' hang bound: $(grep -A1 hang-timeout "$TMP/out")"
echo PASS

#!/bin/bash
# Loads the SVG of `xtimer stacks` in a headless chromium (Debian's `chromium`) and checks that
# the DOM it builds holds the frames' rank annotations, i.e. a browser reads the file. Prints
# SKIP and passes when no chromium is installed.
set -u
XT=cli/xtimer
GEN=stacktrace/gen_stacks
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
. test/browser/chromium.sh
chromium_or_skip
$GEN "$TMP/job" --ranks 8 --nodes 2 --outlier 3 || fail "gen_stacks"
$XT stacks "$TMP/job" -o "$TMP/out" -q || fail "xtimer stacks"
chromium_headless "$TMP" --dump-dom "file://$TMP/out/stacks.svg" >"$TMP/dom" \
  || fail "chromium: $(tail -5 "$TMP/browser.err")"
grep -q "7 ranks: 0-2,4-7" "$TMP/dom" || fail "the DOM lacks the majority's ranks: $(head -c 500 "$TMP/dom")"
grep -q "1 rank: 3" "$TMP/dom" || fail "the DOM lacks the outlier rank"
grep -q "<script" "$TMP/dom" || fail "the DOM lacks the script"
echo PASS

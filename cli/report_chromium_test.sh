#!/bin/bash
# The HTML of `xtimer report` on a dump with an injected straggler, rendered by a headless
# chromium (Debian's `chromium`, installed by tools/install-deps.sh): the screenshot is not blank
# (non-background pixels counted, the straggler's alert-red bars among them) and the DOM chromium
# builds names the straggler and its cause. Prints SKIP and passes when no chromium is installed.
set -u
XT=cli/xtimer
W=cli/write_test_job
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
. test/browser/chromium.sh
chromium_or_skip
$W "$TMP/slow" --slow-rank 3 --steps 40 --job '<script>alert(1)</script>' >/dev/null || fail "write job"
$XT report "$TMP/slow" -o "$TMP/report.html" -q || fail "xtimer report exited $?"
chromium_headless "$TMP" --window-size=1200,1600 --screenshot="$TMP/shot.png" \
  --dump-dom "file://$TMP/report.html" >"$TMP/dom" || fail "chromium: $(tail -5 "$TMP/browser.err")"
grep -q "Rank 3 on communicator" "$TMP/dom" || fail "the DOM lacks the straggler: $(head -c 800 "$TMP/dom")"
grep -q "cause compute" "$TMP/dom" || fail "the DOM lacks the cause"
grep -q "<svg" "$TMP/dom" || fail "the DOM lacks the charts"
grep -q "<script" "$TMP/dom" && fail "the job label became a script element"
PYTHONPATH=test/browser python3 - "$TMP/shot.png" <<'PY' || fail "screenshot"
import sys
import pngread
w, h, rows = pngread.read(sys.argv[1])
bg = rows[0][0]
ink = red = 0
for row in rows:
    for px in row:
        if px != bg: ink += 1
        if pngread.near(px, "#cc3311"): red += 1
share = ink / (w * h)
print("screenshot %dx%d: %.1f%% non-background pixels, %d alert-red" % (w, h, 100 * share, red))
assert share > 0.02, "blank screenshot"
assert red > 500, "no straggler bars drawn"
PY
echo PASS

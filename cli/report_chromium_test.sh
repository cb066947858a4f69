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
python3 - "$TMP/shot.png" <<'PY' || fail "screenshot"
# A PNG read with zlib alone (PIL may be missing): 8-bit RGB or RGBA, non-interlaced.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, head = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": head = struct.unpack(">IIBBBBB", body)
    if kind == b"IDAT": idat += body
    pos += 12 + n
w, h, depth, color, _, _, interlace = head
assert depth == 8 and color in (2, 6) and interlace == 0, head
bpp = 3 if color == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows, i = bytearray(stride), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
bg = tuple(rows[0][0:3])
ink = red = 0
for line in rows:
    for x in range(0, stride, bpp):
        px = tuple(line[x:x + 3])
        if px != bg: ink += 1
        if abs(px[0] - 0xcc) < 12 and abs(px[1] - 0x33) < 12 and abs(px[2] - 0x11) < 12: red += 1
share = ink / (w * h)
print("screenshot %dx%d: %.1f%% non-background pixels, %d alert-red" % (w, h, 100 * share, red))
assert share > 0.02, "blank screenshot"
assert red > 500, "no straggler bars drawn"
PY
echo PASS

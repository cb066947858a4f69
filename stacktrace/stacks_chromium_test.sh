#!/bin/bash
# Loads the SVG of `xtimer stacks` in a headless chromium (Debian's `chromium`): the DOM it builds
# holds the frames' rank annotations; its screenshot is a drawn flame graph (not blank, not one
# colour, the origins' colours there, nothing marked); and the search of the URL fragment
# #search=TEXT (the code path of the "Search" prompt, which a headless browser cannot answer)
# marks exactly the frames whose label holds TEXT, in the DOM and on screen: the outlier rank 3's
# own function, then a frame every rank has. Prints SKIP and passes when no chromium is installed.
set -u
XT=cli/xtimer
GEN=stacktrace/gen_stacks
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }
. test/browser/chromium.sh
chromium_or_skip
$GEN "$TMP/job" --ranks 8 --nodes 2 --outlier 3 || fail "gen_stacks"
$XT stacks "$TMP/job" -o "$TMP/out" -q || fail "xtimer stacks"
SVG="file://$TMP/out/stacks.svg"

# render NAME [#FRAGMENT]: TMP/NAME.dom and a 1200x300 screenshot TMP/NAME.png
render() {
  chromium_headless "$TMP" --window-size=1200,300 --screenshot="$TMP/$1.png" \
    --dump-dom "$SVG${2:-}" >"$TMP/$1.dom" || fail "chromium: $(tail -5 "$TMP/browser.err")"
}

# check_dom NAME TERM RANKS: the frames whose <rect> the search painted purple are exactly those
# whose label (<desc>) holds TERM (none when TERM is empty), each titled RANKS, and the "matched"
# text counts them.
check_dom() {
  python3 - "$TMP/$1.dom" "$2" "$3" <<'PY' || fail "search in the DOM of $1"
import sys
import xml.etree.ElementTree as ET
NS, PURPLE = "{http://www.w3.org/2000/svg}", "#a050e0"
dom, term, ranks = sys.argv[1:]
root = ET.parse(dom).getroot()
marked, wanted = [], []
for g in root.iter(NS + "g"):
    if g.get("class") != "f":
        continue
    title, label = g.find(NS + "title").text, g.find(NS + "desc").text
    if g.find(NS + "rect").get("fill") == PURPLE:
        marked.append((label, title))
    if term and term in label:
        wanted.append(label)
matched = next(t.text or "" for t in root.iter(NS + "text") if t.get("id") == "matched")
print("search %r: %d frames marked %s; the page says %r" %
      (term, len(marked), [l for l, _ in marked], matched))
assert [l for l, _ in marked] == wanted, "marked %s, want %s" % (marked, wanted)
if not term:
    assert matched == "", matched
    sys.exit(0)
assert marked, "no frame marked"
for label, title in marked:
    assert title.endswith(ranks), "%r is titled %r, want %r" % (label, title, ranks)
n = len(marked)
want = 'matched %d %s for "%s"' % (n, "frame" if n == 1 else "frames", term)
assert matched == want, "the page says %r, want %r" % (matched, want)
PY
}

# check_png NAME MIN_PURPLE MAX_PURPLE: the screenshot is a 1200x300 PNG of a drawn flame graph
# (many colours, no one colour over 90%, the Python/interpreter/NCCL/native fills there) with
# MIN_PURPLE..MAX_PURPLE pixels of the search's purple.
check_png() {
  PYTHONPATH=test/browser python3 - "$TMP/$1.png" "$2" "$3" <<'PY' || fail "screenshot $1"
import collections
import os
import sys
import pngread
png, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w, h, rows = pngread.read(png)
count = collections.Counter(px for row in rows for px in row)
top_share = count.most_common(1)[0][1] / (w * h)
fills = {"python": "#6cc46c", "interpreter": "#e0c64a", "nccl/cuda": "#e8684a",
         "native": "#7aa6dc"}
drawn = {k: sum(n for px, n in count.items() if pngread.near(px, c, 20)) for k, c in fills.items()}
purple = sum(n for px, n in count.items() if pngread.near(px, "#a050e0"))
print("screenshot %s: %d bytes, %dx%d, %d colours, top colour %.0f%%, fills %s, %d purple" %
      (os.path.basename(png), os.path.getsize(png), w, h, len(count), 100 * top_share, drawn,
       purple))
assert os.path.getsize(png) > 10000, "a tiny PNG"
assert (w, h) == (1200, 300), (w, h)
assert len(count) > 50 and top_share < 0.9, "a flat screenshot"
for k, n in drawn.items():
    assert n > 500, "no %s frames drawn" % k
assert lo <= purple <= hi, "%d purple pixels, want %d..%d" % (purple, lo, hi)
PY
}

render plain
grep -q "7 ranks: 0-2,4-7" "$TMP/plain.dom" \
  || fail "the DOM lacks the majority's ranks: $(head -c 500 "$TMP/plain.dom")"
grep -q "1 rank: 3" "$TMP/plain.dom" || fail "the DOM lacks the outlier rank"
grep -q "<script" "$TMP/plain.dom" || fail "the DOM lacks the script"
check_dom plain "" ""
check_png plain 0 0

# Only the outlier rank 3 waits in load_batch: one frame, 1/16 of the rank-threads (~74x15 px).
render outlier "#search=load_batch"
check_dom outlier load_batch "1 rank: 3"
check_png outlier 500 2000
# Every rank's main thread is under main (train.py:120); the fragment is URL-encoded.
render every "#search=main%20(train.py%3A120)"
check_dom every "main (train.py:120)" "8 ranks: 0-7"
echo PASS

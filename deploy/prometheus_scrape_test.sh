#!/usr/bin/env bash
# `promtool check config` of deploy/prometheus/xtimer-scrape.yml (it also checks the rule file it
# loads), and the settings the rules and docs rely on: honor_labels on every scrape job and the
# `node` label (docs/deploy.md#prometheus). A real Prometheus runs it in
# //test/e2e:cluster_recipes_e2e_test. Usage: prometheus_scrape_test.sh SCRAPE.yml
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 SCRAPE.yml" >&2; exit 2; }
promtool=$(command -v promtool || true)
if [[ -z "$promtool" ]]; then
  echo "FAIL: promtool is not installed; run tools/install-deps.sh (Debian's prometheus)" >&2
  exit 1
fi
"$promtool" check config "$1"
jobs=$(grep -c '^  - job_name:' "$1")
honor=$(grep -c '^    honor_labels: true$' "$1")
if [[ "$jobs" -eq 0 || "$jobs" != "$honor" ]]; then
  echo "FAIL: $1: $jobs scrape jobs, $honor with honor_labels: true (every job needs it)" >&2
  exit 1
fi
grep -q '^        target_label: node$' "$1" || { echo "FAIL: $1 sets no node label" >&2; exit 1; }
echo PASS

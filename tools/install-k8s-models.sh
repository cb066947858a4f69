#!/usr/bin/env bash
# tools/install-k8s-models.sh: installs the Kubernetes API schema that //deploy:k8s_manifests_test
# validates deploy/k8s/ against: the npm packages kubernetes-models 5.1.0 and
# @kubernetes-models/prometheus-operator 6.0.0 (MIT; JSON schemas with an ajv validator, usable
# offline once installed), pinned with their integrity hashes by
# deploy/k8s/validate/package-lock.json (`npm ci`). Needs node and npm.
#
# Usage: tools/install-k8s-models.sh [--check] [DIR]   (default $XTIMER_K8S_MODELS or
#        /var/cache/xtimer/k8s-models-5.1.0). Idempotent. --check: install nothing; exit 0 if
#        DIR holds the packages, else name what is missing and exit 1.
set -euo pipefail
CHECK=0
if [[ "${1:-}" == "--check" ]]; then CHECK=1; shift; fi
DIR=${1:-${XTIMER_K8S_MODELS:-/var/cache/xtimer/k8s-models-5.1.0}}
SRC="$(cd "$(dirname "$0")/../deploy/k8s/validate" && pwd)"
installed() {
  [[ -f "$DIR/node_modules/kubernetes-models/apps/v1/DaemonSet.js" &&
     -f "$DIR/node_modules/@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.js" ]] &&
    cmp -s "$SRC/package-lock.json" "$DIR/package-lock.json"
}
if installed; then exit 0; fi
if [[ $CHECK == 1 ]]; then echo "the Kubernetes schema (kubernetes-models) in $DIR"; exit 1; fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install-k8s-models: $tool is missing (install Node.js 20 and npm)" >&2; exit 1; }
done
SUDO=()
if ! mkdir -p "$DIR" 2>/dev/null || [[ ! -w "$DIR" ]]; then SUDO=(sudo); "${SUDO[@]}" mkdir -p "$DIR"; fi
"${SUDO[@]}" cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
(cd "$DIR" && "${SUDO[@]}" npm ci --no-audit --no-fund --loglevel=error >/dev/null)
installed || { echo "install-k8s-models: npm ci in $DIR did not install the schema" >&2; exit 1; }
echo "install-k8s-models: installed kubernetes-models in $DIR" >&2

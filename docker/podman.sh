#!/usr/bin/env bash
# docker/podman.sh ARGS...: podman with the settings that let it run containers on machines like
# the project's build hosts (docs/deploy.md#podman-here): CONTAINERS_CONF=docker/containers.conf
# (no default ulimits) and the runtime /usr/sbin/runc (Debian's runc; crun may be missing).
# `run` also gets `--ulimit host` (the host's limits) and `run` and `build` `--network host` (no
# network namespace: containers see the host's loopback, so a daemon's port inside is scraped
# from the host; `podman build` takes no `--ulimit host`). Every other argument is podman's own.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
runtime="${XTIMER_PODMAN_RUNTIME:-/usr/sbin/runc}"
if ! command -v podman >/dev/null; then
  echo "podman.sh: podman is not installed: apt-get install podman runc (docs/deploy.md)" >&2
  exit 127
fi
if [[ ! -x "$runtime" ]]; then
  echo "podman.sh: no container runtime at $runtime: apt-get install runc, or set XTIMER_PODMAN_RUNTIME" >&2
  exit 127
fi
case "${1:-}" in
  run) shift; exec podman --runtime "$runtime" run --ulimit host --network host "$@" ;;
  build) shift; exec podman --runtime "$runtime" build --network host "$@" ;;
  *) exec podman --runtime "$runtime" "$@" ;;
esac

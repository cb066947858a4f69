#!/usr/bin/env bash
# docker/build-base.sh [--force]
#
# Builds the two Debian 12 base images that docker/Containerfile starts from, without pulling
# anything from a registry (base images cannot be pulled here): `debootstrap --variant=minbase`
# into a folder, `podman import` of that folder, then the build packages installed in a container
# of it and committed.
#
#   localhost/xtimer-runtime-base:bookworm   minbase + python3 (the demo's launcher)
#   localhost/xtimer-build-base:bookworm     the above + the build packages of
#                                            `tools/install-deps.sh --list-build` + patchelf
#
# An image that exists is kept unless --force, or (the build image) it lacks a listed package.
# Needs root (debootstrap), debootstrap, podman, runc and Debian's package mirror
# (XTIMER_DEBIAN_MIRROR, default http://deb.debian.org/debian).
# The folder is XTIMER_BASE_WORKDIR (default /var/tmp/xtimer-base), removed at the end.
# See docs/deploy.md#the-container-image.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
podman=("$here/podman.sh")
mirror="${XTIMER_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="${XTIMER_BASE_WORKDIR:-/var/tmp/xtimer-base}"
runtime_image=localhost/xtimer-runtime-base:bookworm
build_image=localhost/xtimer-build-base:bookworm
force=0
case "${1:-}" in
  --force) force=1 ;;
  "") ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "build-base.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac
if [[ $(id -u) -ne 0 ]]; then
  echo "build-base.sh: debootstrap needs root: run it as root (or with sudo)" >&2; exit 2
fi
command -v debootstrap >/dev/null || {
  echo "build-base.sh: debootstrap is missing: apt-get install debootstrap" >&2; exit 2; }

exists() { [[ $force == 0 ]] && "${podman[@]}" image exists "$1"; }

if ! exists "$runtime_image"; then
  rm -rf "$work"
  mkdir -p "$work"
  trap 'rm -rf "$work"' EXIT
  echo "build-base.sh: debootstrap bookworm from $mirror into $work/rootfs" >&2
  debootstrap --variant=minbase --include=python3 bookworm "$work/rootfs" "$mirror" \
    > "$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" --numeric-owner -c . |
    "${podman[@]}" import --change 'CMD ["/bin/bash"]' - "$runtime_image"
fi

packages="$("$repo/tools/install-deps.sh" --list-build | tr '\n' ' ') patchelf"
# A build image that lacks a package of the list (one added since it was built, such as
# libdw-dev) is built again.
has_packages() { "${podman[@]}" run --rm "$1" dpkg-query -W $packages >/dev/null 2>&1; }
if ! exists "$build_image" || ! has_packages "$build_image"; then
  ctr="xtimer-build-base-$$"
  echo "build-base.sh: installing into $build_image: $packages" >&2
  "${podman[@]}" run --name "$ctr" "$runtime_image" sh -c \
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
     --no-install-recommends $packages >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*"
  "${podman[@]}" commit -q "$ctr" "$build_image" >/dev/null
  "${podman[@]}" rm "$ctr" >/dev/null
fi
"${podman[@]}" images --filter reference='localhost/xtimer-*-base' \
  --format '{{.Repository}}:{{.Tag}} {{.Size}}'

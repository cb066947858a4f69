#!/usr/bin/env bash
# tools/install-deps.sh: installs the Debian 12 packages xtimer needs that are missing.
# The one list of packages of the project. Idempotent; needs root (or sudo) only when something
# is missing. Usage: tools/install-deps.sh [--check | --list-build]
#   --check: list what is missing, exit 1 if any
#   --list-build: print the packages that building (not testing) needs, one a line
#                 (docker/build-base.sh installs them into the image's builder base)
set -euo pipefail

BUILD_PACKAGES=(
  bazel-bootstrap g++ binutils python3
  # libraries (headers + .so) used by daemon, CLI and tests
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev prometheus-cpp-dev
  libabsl-dev libunwind-dev liblzma-dev libgtest-dev libgmock-dev libbenchmark-dev python3-dev
  libdeflate-dev zlib1g-dev
  # elfutils' libdw and libelf: file:line of native frames (stacktrace/dwarf_lines.cc)
  libdw-dev libelf-dev
)

if [[ "${1:-}" == "--list-build" ]]; then
  printf '%s\n' "${BUILD_PACKAGES[@]}"
  exit 0
fi

PACKAGES=(
  "${BUILD_PACKAGES[@]}"
  # the suite's fuzz run (tools/dev.sh fuzz): clang with libFuzzer
  clang libclang-rt-14-dev
  # tools the tests drive for real (prometheus ships promtool, for //deploy:prometheus_rules_test)
  curl prometheus python3-grpcio valgrind openmpi-bin strace
  # a headless browser: //cli:report_chromium_test and //stacktrace:stacks_chromium_test render
  # the report and the flame graph in it
  chromium
  # loads the operation logs as users do (//test/e2e:op_log_e2e_test, docs/oplog.md)
  python3-pandas
  # finds functions and their ends for the code size limits (tools/code_size.sh)
  universal-ctags
  # the container image, built and run by //docker:image_test on every machine that runs the
  # suite (its bases come from debootstrap: docker/build-base.sh)
  podman runc debootstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ "${XTIMER_SKIP_PERFETTO_TP:-0}" != 1 ]]; then
  missing_tp=$("$(dirname "$0")/install-perfetto-tp.sh" --check || true)
  missing_k8s=$("$(dirname "$0")/install-k8s-models.sh" --check || true)
  missing_tp="${missing_tp}${missing_tp:+${missing_k8s:+, }}${missing_k8s}"
fi

if [[ "${1:-}" == "--check" ]]; then
  if [[ ${#missing[@]} -gt 0 || -n "${missing_tp:-}" ]]; then
    echo "missing: ${missing[*]} ${missing_tp:-}"
    exit 1
  fi
  echo "all packages installed"; exit 0
fi

apt_install() {
  echo "install-deps: installing $*" >&2
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "$@" >/dev/null
}

if [[ ${#missing[@]} -gt 0 ]]; then
  apt_install "${missing[@]}"
fi

# Perfetto's own trace processor, to check our traces with the reader ui.perfetto.dev uses. It
# runs under Node.js: machines of this project's kind have Node.js 20 with npm; elsewhere Debian's
# nodejs and npm are installed (only when there is no node at all, so as not to fight a newer one).
if [[ "${XTIMER_SKIP_PERFETTO_TP:-0}" != 1 ]]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
  fi
  "$(dirname "$0")/install-perfetto-tp.sh"
fi
# The Kubernetes API schema that //deploy:k8s_manifests_test validates deploy/k8s/ against (npm).
if [[ "${XTIMER_SKIP_PERFETTO_TP:-0}" != 1 ]]; then
  "$(dirname "$0")/install-k8s-models.sh"
fi

if [[ ! -x /usr/local/cuda/bin/nvcc || ! -e /usr/local/cuda/lib64/libnccl.so.2 ]]; then
  echo "install-deps: the CUDA 13 toolkit with cuBLAS and NCCL must be at /usr/local/cuda" \
       "(nvcc and the real libraries are needed to build the test programs)" >&2
  exit 1
fi

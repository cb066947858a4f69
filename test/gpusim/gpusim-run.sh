#!/usr/bin/env bash
# gpusim-run CMD [ARGS...]: runs an unmodified CUDA program (built with `nvcc -cudart shared`)
# on the GPU simulator: the stand-in libcuda, libcudart, libcublas, libcublasLt and libnccl beside
# this script go first on LD_LIBRARY_PATH. See docs/gpusim.md for the XTIMER_SIM_* knobs.
set -euo pipefail
if [[ $# -eq 0 || "$1" == "--help" || "$1" == "-h" ]]; then
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
  exit $(( $# == 0 ? 2 : 0 ))
fi
if [[ "$1" == "--version" ]]; then
  cat "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../VERSION"
  exit 0
fi
# Not resolving symlinks on purpose: bazel-bin/test/gpusim/ and a test's runfiles directory
# hold this script next to the five libraries.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
libdir="${XTIMER_GPUSIM_LIBDIR:-$here}"
if [[ ! -e "$libdir/libcudart.so.13" ]]; then
  echo "gpusim-run: no libcudart.so.13 in $libdir (build //test/gpusim:gpusim-run first, or set XTIMER_GPUSIM_LIBDIR)" >&2
  exit 2
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Sanitizer builds of the simulator need their runtime loaded first in uninstrumented programs.
if readelf -d "$libdir/libcudart.so.13" 2>/dev/null | grep -q 'libasan'; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)${LD_PRELOAD:+:$LD_PRELOAD}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
elif readelf -d "$libdir/libcudart.so.13" 2>/dev/null | grep -q 'libtsan'; then
  export LD_PRELOAD="$(gcc -print-file-name=libtsan.so)${LD_PRELOAD:+:$LD_PRELOAD}"
fi
exec "$@"

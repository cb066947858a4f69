#!/usr/bin/env bash
# tools/gpu_check/pack.sh OUT: the optimized binaries the real-GPU check runs, with the shared
# libraries they need that a machine with only a GPU stack may lack, in one folder to copy there:
#   OUT/xtimer-launch OUT/xtimerd OUT/libxtimer.so   built -c opt (what ships)
#   OUT/lib/        xtimerd's libraries (gRPC, protobuf, Abseil, ...): only the daemon is run with it
#   OUT/hooklib/    libxtimer.so's own (libunwind): added to the workloads' LD_LIBRARY_PATH
# Then, there: python3 tools/gpu_check/gpu_check.py --bin OUT. Leaves bazel-bin as it was.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
out=${1:?usage: tools/gpu_check/pack.sh OUT}
targets=(//launcher:xtimer-launch //daemon:xtimerd //hook:libxtimer.so)
bazel build -c opt --symlink_prefix=/ "${targets[@]}"
bin=$(bazel info -c opt --symlink_prefix=/ bazel-bin 2>/dev/null)
mkdir -p "$out/lib" "$out/hooklib"
cp -f "$bin/launcher/xtimer-launch" "$bin/daemon/xtimerd" "$bin/hook/libxtimer.so" "$out/"
# Debug sections off the copies (the build keeps -g): a smaller folder to carry; symbols stay.
strip --strip-debug "$out/xtimer-launch" "$out/xtimerd" "$out/libxtimer.so"
# Every library but the C runtime's own (the machine's newer glibc and libstdc++ serve).
core='^(linux-vdso|libc\.|libm\.|libgcc_s|libstdc\+\+|ld-linux|libpthread|libdl\.|librt\.)'
copy_deps() {
  ldd "$1" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $core ]] || cp -fL "$path" "$2/"
  done
}
copy_deps "$out/xtimerd" "$out/lib"
copy_deps "$out/libxtimer.so" "$out/hooklib"
du -sh "$out"

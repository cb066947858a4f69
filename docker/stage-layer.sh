#!/usr/bin/env bash
# docker/stage-layer.sh BIN_DIR DEST DEMO_DEST: lays out the runtime layer (docs/deploy.md#the-runtime-layer)
# from a bazel-bin directory, in the image's builder stage:
#   DEST/bin/{xtimerd,xtimer-launch,xtimer}, DEST/lib/libxtimer.so, DEST/share/{deploy,VERSION}
#   DEST/lib/*: every library xtimerd, xtimer and libxtimer.so load beyond glibc, libstdc++ and
#   libgcc_s (the target image has its own); RUNPATH $ORIGIN/../lib for the programs, $ORIGIN
#   for the libraries (patchelf)
#   DEMO_DEST: the demo on the GPU simulator (train_step, demo/launch.py, gpusim-run and its
#   four stand-in libraries, docker/demo.sh)
# Fails when a file is missing or a program cannot find a library in the layer.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 BIN_DIR DEST DEMO_DEST" >&2; exit 2; }
bin="$1" dest="$2" demo="$3"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$dest/bin" "$dest/lib" "$dest/share" "$demo/gpusim"
install -m 0755 "$bin/daemon/xtimerd" "$bin/launcher/xtimer-launch" "$bin/cli/xtimer" "$dest/bin/"
install -m 0755 "$bin/hook/libxtimer.so" "$dest/lib/"
cp -r "$repo/deploy" "$dest/share/deploy"
rm -rf "$dest/share/deploy/BUILD.bazel" "$dest/share/deploy/"*_test.* \
  "$dest/share/deploy/prometheus/"*_test.yml "$dest/share/deploy/k8s/validate"
cp "$repo/VERSION" "$dest/share/VERSION"

# The libraries of the programs and of the hook (libunwind, for stack capture), as the loader
# resolves them here, except the base system's.
system='^(linux-vdso|libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt)\.so'
for prog in "$dest/bin/xtimerd" "$dest/bin/xtimer" "$dest/lib/libxtimer.so"; do
  ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $system ]] || install -m 0644 "$(readlink -f "$path")" "$dest/lib/$name"
  done
done
patchelf --set-rpath '$ORIGIN/../lib' "$dest/bin/xtimerd" "$dest/bin/xtimer"
for lib in "$dest/lib/"*.so*; do
  patchelf --set-rpath '$ORIGIN' "$lib"
done
for prog in "$dest/bin/xtimerd" "$dest/bin/xtimer" "$dest/lib/libxtimer.so"; do
  if ldd "$prog" | grep -q 'not found'; then
    echo "stage-layer.sh: $prog misses a library:" >&2; ldd "$prog" | grep 'not found' >&2; exit 1
  fi
done

install -m 0755 "$bin/demo/train_step" "$repo/demo/launch.py" "$repo/docker/demo.sh" "$demo/"
install -m 0755 "$repo/test/gpusim/gpusim-run.sh" "$demo/gpusim/gpusim-run"
install -m 0755 "$bin/test/gpusim/"lib*.so.* "$demo/gpusim/"
rm -f "$demo/gpusim/"*.params
du -sh "$dest" "$demo"

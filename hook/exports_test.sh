#!/usr/bin/env bash
# libxtimer.so exports exactly the checked-in list (intercepted symbols + xtimer_* C API) and
# depends on no gRPC, protobuf or Prometheus library.
# Usage: exports_test.sh LIBXTIMER_SO EXPORTED_SYMBOLS_TXT
set -euo pipefail
lib=$1; expected=$2
# Global definitions only (TLS variables appear in .dynsym as LOCAL for their relocations).
nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ {print $3}' | sort > actual.txt
if ! diff -u "$expected" actual.txt; then
  echo "FAIL: exported symbols differ from $expected (lines with + are exported but not listed)"
  exit 1
fi
# Every thread-local the hook defines is initial-exec with hidden visibility and external linkage:
# an internal-linkage one (an anonymous namespace's) beside them once made ld (binutils 2.40) emit
# an empty dynamic symbol and shift two TPOFF relocations by one, so NVTX pushes wrote over
# t_device and t_in_hook.
if readelf --dyn-syms -W "$lib" | awk '$4 == "TLS" && $7 != "UND" && ($6 != "HIDDEN" || $8 ~ /_GLOBAL__N_/)' |
    grep .; then
  echo "FAIL: thread-locals above are not hidden with external linkage (see hook/recorder.h)"
  exit 1
fi
if readelf -d "$lib" | grep NEEDED |
    grep -Ei 'grpc|protobuf|prometheus|absl|libcuda|cublas|nccl'; then
  echo "FAIL: libxtimer.so must not depend on the libraries above"
  exit 1
fi
echo PASS

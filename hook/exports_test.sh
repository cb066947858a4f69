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
if readelf -d "$lib" | grep NEEDED |
    grep -Ei 'grpc|protobuf|prometheus|absl|libcuda|cublas|nccl'; then
  echo "FAIL: libxtimer.so must not depend on the libraries above"
  exit 1
fi
echo PASS

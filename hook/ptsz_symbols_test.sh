#!/usr/bin/env bash
# The per-thread default stream build of the workload really calls the _ptsz / _ptds entry points
# that libxtimer.so hooks (and none of their legacy-stream twins); the default build calls none.
# Usage: ptsz_symbols_test.sh WORKLOAD WORKLOAD_PTSZ
set -euo pipefail
plain=$1; ptsz=$2
undefined() { nm -D --undefined-only "$1" | awk '{print $2}' | sed 's/@.*//' | sort -u; }
undefined "$plain" > plain.txt
undefined "$ptsz" > ptsz.txt
fail=0
for base in cudaMemcpyAsync cudaMemsetAsync __cudaLaunchKernel cudaStreamSynchronize \
            cudaGraphLaunch; do
  grep -qx "${base}_ptsz" ptsz.txt || { echo "FAIL: per-thread build lacks ${base}_ptsz"; fail=1; }
  grep -qx "$base" ptsz.txt && { echo "FAIL: per-thread build calls legacy $base"; fail=1; }
  grep -qx "$base" plain.txt || { echo "FAIL: default build lacks $base"; fail=1; }
done
for base in cudaMemcpy cudaMemset; do
  grep -qx "${base}_ptds" ptsz.txt || { echo "FAIL: per-thread build lacks ${base}_ptds"; fail=1; }
  grep -qx "$base" ptsz.txt && { echo "FAIL: per-thread build calls legacy $base"; fail=1; }
done
if grep -E '_pt(sz|ds)$' plain.txt; then
  echo "FAIL: the default build calls per-thread entry points"
  fail=1
fi
[ "$fail" = 0 ] && echo PASS
exit "$fail"

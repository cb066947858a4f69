#!/usr/bin/env bash
# Runs nvcc-built CUDA programs, linked against the real /usr/local/cuda libraries, on the GPU
# simulator. Usage: runtime_check_test.sh GPUSIM_RUN PROGRAM PROGRAM_PER_THREAD
set -euo pipefail
run=$1; program=$2; program_pt=$3
export XTIMER_SIM_KERNEL_TIMES='scale_kernel=50'

echo "== default stream build"
"$run" "$program" 50 | tee out.txt
grep -q '^OK$' out.txt
echo "== per-thread default stream build (_ptsz / _ptds entry points)"
"$run" "$program_pt" 50 | tee out.txt
grep -q '^OK$' out.txt

echo "== slow-rank fault: rank 3's kernels take 3x longer"
XTIMER_SIM_RANK=3 XTIMER_SIM_SLOW_RANKS=1:2,3:3 "$run" "$program" 150 | grep -q '^OK$'
XTIMER_SIM_RANK=2 XTIMER_SIM_SLOW_RANKS=1:2,3:3 "$run" "$program" 50 | grep -q '^OK$'

echo "== a malformed knob is a clear error"
if XTIMER_SIM_SLOW_RANKS=three "$run" "$program" 2> err.txt; then
  echo "expected failure"; exit 1
fi
grep -q 'XTIMER_SIM_SLOW_RANKS' err.txt

echo "== no device: the program gets cudaErrorNoDevice, not a crash"
if XTIMER_SIM_DEVICE_COUNT=0 "$run" "$program" 2> err.txt; then
  echo "expected failure"; exit 1
fi
grep -q 'no CUDA-capable device' err.txt
echo PASS

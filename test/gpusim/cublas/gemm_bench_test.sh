#!/usr/bin/env bash
# Runs gemm_bench -- built by nvcc against the real CUDA libraries, unmodified -- on the GPU
# simulator through gpusim-run, and checks that every case reports the configured TFLOPS
# (XTIMER_SIM_TFLOPS_<DTYPE>, divided by the slow-rank factor) within 2%.
# Usage: gemm_bench_test.sh GPUSIM_RUN GEMM_BENCH
set -euo pipefail
run=$1; bench=$2
unset "${!XTIMER_SIM_@}" NVIDIA_TF32_OVERRIDE  # each case below sets what it needs
out="${TEST_TMPDIR:-/tmp}/gemm_bench.out"
failures=0

# check NAME EXPECTED_ROWS "dtype=TFLOPS ..." [VAR=VALUE ...]
check() {
  local name="$1" rows="$2" rates="$3"
  shift 3
  # The bench's DelayKernel holds the GPU 20 ms so launches (slow under sanitizers) queue ahead.
  if ! env XTIMER_SIM_KERNEL_TIMES='DelayKernel=20000' "$@" "$run" "$bench" --iters 10 --warmup 2 \
      >"$out" 2>&1; then
    echo "FAIL $name: gemm_bench exited with an error:"
    cat "$out"
    failures=$((failures + 1))
    return
  fi
  if ! awk -v rates="$rates" -v rows="$rows" -v name="$name" '
      BEGIN { n = split(rates, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); want[p[1]] = p[2] } }
      /^#/ || $1 == "api" { next }
      {
        seen++
        if (!($2 in want)) { printf "FAIL %s: unexpected dtype %s\n", name, $2; bad++; next }
        err = ($NF - want[$2]) / want[$2]; if (err < 0) err = -err
        status = err <= 0.02 ? "ok  " : "FAIL"
        if (err > 0.02) bad++
        printf "%s %s: %s %s %s: %.2f TFLOPS, expected %.2f\n", status, name, $1, $2, $3, $NF, want[$2]
      }
      END {
        if (seen != rows) { printf "FAIL %s: %d result rows, expected %d\n", name, seen, rows; bad++ }
        exit bad > 0
      }' "$out"; then
    cat "$out"
    failures=$((failures + 1))
  fi
}

# 4 GemmEx + 1 strided batched + 2 Sgemm + 4 Lt bf16 + 4 Lt fp8.
rows=15
check defaults "$rows" "bf16=800 fp16=800 tf32=400 fp32=60 fp8=1600" XTIMER_SIM_RANK=0
check configured "$rows" "bf16=312 fp16=250 tf32=156 fp32=19.5 fp8=990" XTIMER_SIM_RANK=0 \
  XTIMER_SIM_TFLOPS_BF16=312 XTIMER_SIM_TFLOPS_FP16=250 XTIMER_SIM_TFLOPS_TF32=156 \
  XTIMER_SIM_TFLOPS_FP32=19.5 XTIMER_SIM_TFLOPS_FP8=990
# A slow rank's GEMMs take 2.5 times longer.
check slow_rank "$rows" "bf16=320 fp16=320 tf32=160 fp32=24 fp8=640" XTIMER_SIM_RANK=1 \
  XTIMER_SIM_SLOW_RANKS=1:2.5

if ((failures > 0)); then
  echo "$failures configuration(s) failed"
  exit 1
fi
echo "all configurations passed"

#!/usr/bin/env bash
# The 8-rank tp2-pp2-dp2 demo job on 2 emulated nodes runs 3 steps on the GPU simulator, every
# rank passes its checks, and rank 0 prints one line per step and a summary.
source demo/testlib.sh

OUT="$TMP/demo.out"
run_job "$OUT" --timeout 240
expect_rc 0 "demo job"
expect_line '^\[rank 0\] train_step: world 8 = tp 2 x dp 2 x pp 2' "layout header"
expect_line '^\[rank 0\] train_step: TP groups \[0 1\] \[2 3\] \[4 5\] \[6 7\]; DP groups \[0 2\] \[1 3\] \[4 6\] \[5 7\]; PP groups \[0 4\] \[1 5\] \[2 6\] \[3 7\]$' "Megatron rank order"
for s in 1 2 3; do
  expect_line "^\[rank 0\] step $s/3  [0-9.]+ ms  \(gpu [0-9.]+ ms, gemm [0-9.]+ GFLOP = [0-9.]+ TFLOP/s of gpu time; dp all-reduce ok, tp all-gather ok, pp send/recv ok\)$" "step $s line"
done
expect_no_line '^\[rank [1-7]\] step ' "only rank 0 prints step lines"
expect_line '^\[rank 0\] train_step: done: 3 steps on 8 ranks; .*all checks passed$' "summary"
expect_line '^launch: all 8 ranks exited 0' "launcher summary"
grep -E '^\[rank 0\] (step|train_step: done)' "$OUT"
echo PASS

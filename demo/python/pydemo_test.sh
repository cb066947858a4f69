#!/usr/bin/env bash
# demo/python without xtimer: the modules are built as Python loads them (DT_NEEDED on the CUDA
# libraries, no rpath, only the C ABI exported); 2 ranks of pydemo.py under Debian's
# /usr/bin/python3 pass every check on the simulator, loading the cuBLAS module late and
# round-tripping results through the extension module imported with importlib (--ext); usage and
# setup errors exit 2 / 1 with a message that says what to do.
source demo/testlib.sh

PY=/usr/bin/python3
# Under --config=asan gpusim-run preloads ASan into the interpreter, whose own allocations at exit
# LeakSanitizer would report; the simulator's leaks are checked by its C++ tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
PYDEMO="$PWD/demo/python/pydemo.py"
LIB_DIR="$PWD/demo/python"

needed() { readelf -d "$LIB_DIR/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }
[[ "$(needed libpydemo_core.so)" == *"libcudart.so.13 "*"libnccl.so.2 "* ]] ||
  fail "libpydemo_core.so needs: $(needed libpydemo_core.so)"
[[ "$(needed libpydemo_gemm.so)" == *"libcublas.so.13 libcudart.so.13 "* ]] ||
  fail "libpydemo_gemm.so needs: $(needed libpydemo_gemm.so)"
for lib in libpydemo_core.so libpydemo_gemm.so; do
  if readelf -d "$LIB_DIR/$lib" | grep -Eq 'RPATH|RUNPATH'; then fail "$lib has an rpath"; fi
  others=$(nm -D --defined-only "$LIB_DIR/$lib" |
           awk '$2 == "T" && $3 !~ /^(pydemo_|_init$|_fini$)/ { print $3 }')
  [[ -z "$others" ]] || fail "$lib exports functions other than pydemo_*: $others"
done

OUT="$TMP/pydemo.out"
set +e
"$LAUNCH" --nproc 2 --timeout 120 -- "$GPUSIM_RUN" "$PY" "$PYDEMO" --lib-dir "$LIB_DIR" \
  --steps 4 --late-step 2 --ext >"$OUT" 2>&1
RC=$?
set -e
expect_rc 0 "2-rank job"
expect_line '^\[rank 0\] pydemo: python 3\.11\.[0-9]+ \(/usr/bin/python3\); 2 ranks; libpydemo_core\.so loaded with ctypes\.CDLL \(RTLD_LOCAL\)$' "header"
expect_line '^\[rank 0\] pydemo: imported pydemo_ext with importlib \(RTLD_LOCAL\)$' "importlib line"
for r in 0 1; do
  for s in 1 2; do
    expect_line "^\[rank $r\] pydemo: step $s/4 checksum [0-9a-f]{16} \(all-reduce ok, all-gather ok, broadcast from rank $(( (s - 1) % 2 )) ok, pydemo_ext ok\)$" "rank $r step $s"
  done
  expect_line "^\[rank $r\] pydemo: loaded libpydemo_gemm\.so before step 3: cuBLAS is used from now on$" "late load on rank $r"
  for s in 3 4; do
    expect_line "^\[rank $r\] pydemo: step $s/4 checksum [0-9a-f]{16} \(.*, 2 gemms, pydemo_ext ok\)$" "rank $r step $s with GEMMs"
  done
  expect_line "^\[rank $r\] pydemo: done: 4 steps on 2 ranks, all checks passed" "rank $r summary"
done
expect_line '^launch: all 2 ranks exited 0' "launcher summary"

run_one() {  # run_one OUTFILE ENV... -- ARGS...: one pydemo.py process on the simulator; sets RC
  local out="$1" envs=()
  shift
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  set +e
  env ${envs[@]+"${envs[@]}"} "$GPUSIM_RUN" "$PY" "$PYDEMO" "$@" >"$out" 2>&1
  RC=$?
  set -e
}

OUT="$TMP/help.out"; run_one "$OUT" -- --help
expect_rc 0 "--help"; expect_line '--late-step L' "--help lists the flags"
OUT="$TMP/badflag.out"; run_one "$OUT" -- --bogus
expect_rc 2 "unknown flag"; expect_line 'unrecognized arguments: --bogus' "unknown flag message"
OUT="$TMP/badsteps.out"; run_one "$OUT" -- --steps 0
expect_rc 2 "--steps 0"; expect_line 'must be >= 1' "--steps 0 message"
OUT="$TMP/nolib.out"; run_one "$OUT" -- --lib-dir "$TMP/nowhere"
expect_rc 1 "missing modules"
expect_line "^pydemo: rank 0: cannot load $TMP/nowhere/libpydemo_core\.so: .*build //demo/python:libs, or pass --lib-dir\)$" "missing module message"
OUT="$TMP/nordzv.out"; run_one "$OUT" RANK=1 WORLD_SIZE=2 -- --lib-dir "$LIB_DIR"
expect_rc 1 "no rendezvous directory"
expect_line 'XTIMER_DEMO_RENDEZVOUS is not set: with WORLD_SIZE > 1 it must name a directory' "rendezvous message"
OUT="$TMP/badrank.out"; run_one "$OUT" RANK=3 WORLD_SIZE=2 -- --lib-dir "$LIB_DIR"
expect_rc 1 "RANK out of range"; expect_line 'RANK 3 is not in \[0, WORLD_SIZE 2\)' "rank message"
echo PASS

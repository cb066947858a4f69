#!/usr/bin/env bash
# tools/dev.sh: the project's entry points; each installs missing packages and builds first.
#
#   tools/dev.sh demo [ARGS]  build (as `build`) and run the demo on the GPU simulator: a job on
#                        two emulated nodes, each with its own xtimerd, one rank with a slow data
#                        loader, and what xtimer found; ARGS go to demo/run_xtimer_demo.sh
#                        (--fault hang|crash|slow-link|..., --healthy, --keep, --python)
#   tools/dev.sh test    run the whole test suite: plain, ASan+UBSan, and TSan on the concurrent parts,
#                        the fuzz run and the code size limits (tools/code_size.sh); ends with the
#                        line "N passed, N failed"
#   tools/dev.sh build   build the optimized (-c opt) programs the README and the demo run;
#                        bazel-bin then points at them (`bazel build //...` builds everything)
#   tools/dev.sh fuzz    build the libFuzzer targets with clang and run each for its budget
#                        (part of `test`; XTIMER_FUZZ_SECONDS, when set, replaces every budget)
#
# Environment: XTIMER_BAZEL_FLAGS adds flags to every bazel build/test command.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

# Targets that run threads against each other: also run under ThreadSanitizer.
TSAN_TARGETS=(//test/gpusim/... //format/... //daemon/... //hook/... //timeline/... //cli/...)
# The end-to-end tests preload libxtimer.so into every process of a job (Python launchers
# included), which a sanitizer-built library cannot be; their parts run under the sanitizers in
# their own packages' tests.
SANITIZER_EXCLUDE=(-//test/e2e/...)
# What the README runs from bazel-bin/.
README_TARGETS=(//launcher:xtimer-launch //daemon:xtimerd //hook:libxtimer.so //cli:xtimer
  //test/gpusim:gpusim-run)
# What ships is what is measured: the README's programs and the demo's are built as every figure
# of docs/benchmarks.md is, optimized. Only these (not //...), so that the first command of the
# README stays within minutes on 2 cores.
OPT_FLAGS=(-c opt)
OPT_TARGETS=("${README_TARGETS[@]}" //demo:train_step //demo:diag_job //demo/python:libs)

# libFuzzer targets (clang) and their seconds in the suite's fuzz run: the dump reader is the
# input the crafted-header attacks of issue 20 aim at; the daemon's parse what local clients send.
FUZZ_TARGETS=("//cli/readers:dump_reader_fuzzer 120" "//timeline:timeline_reader_fuzzer 60"
  "//daemon/export:http_request_fuzzer 30" "//daemon/export:record_fuzzer 30")
# Their own output tree (platform suffix), so the clang objects never replace the gcc ASan ones.
FUZZ_FLAGS=(--config=asan --platform_suffix=asanfuzz --copt=-fsanitize=fuzzer-no-link
  --linkopt=-fsanitize-link-c++-runtime)

bazel_flags() { echo ${XTIMER_BAZEL_FLAGS:-}; }

# Builds OPT_TARGETS optimized; bazel-bin then points at that build.
build_opt() { bazel build $(bazel_flags) "${OPT_FLAGS[@]}" "${OPT_TARGETS[@]}"; }

# Prints the optimized build's bazel-bin directory (what `build` built; the demo runs it).
opt_bin_dir() { bazel info $(bazel_flags) "${OPT_FLAGS[@]}" bazel-bin 2>/dev/null; }

build() {
  tools/install-deps.sh
  build_opt
}

# Runs `bazel test` with the given flags and targets; appends its per-target results to $RESULTS.
run_tests() {
  local log
  log=$(mktemp)
  set +e
  bazel test --keep_going $(bazel_flags) "$@" 2>&1 | tee "$log"
  set -e
  # Lines like "//demo:demo_test    PASSED in 3.1s" / "FAILED in ..." / "FAILED TO BUILD" / "TIMEOUT".
  grep -E '^//[^ ]+ +(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log" \
    | sed "s|^|[$1] |" >> "$RESULTS" || true
  if ! grep -qE '^//[^ ]+ +(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log"; then
    echo "[$1] (bazel test $* produced no results) FAILED" >> "$RESULTS"
  fi
  rm -f "$log"
}

test_all() {
  tools/install-deps.sh
  RESULTS=$(mktemp)
  export RESULTS
  run_tests --config=default -- //...
  # Tests tagged plain_only measure the plain build (memory bounds): not under the sanitizers.
  run_tests --config=asan --test_tag_filters=-plain_only -- //... "${SANITIZER_EXCLUDE[@]}"
  run_tests --config=tsan --test_tag_filters=-plain_only -- "${TSAN_TARGETS[@]}"
  fuzz || true
  # Production code's size limits (issue 19): no file over 800 lines, no function over 110.
  if tools/code_size.sh; then
    echo "[size] tools/code_size.sh PASSED" >> "$RESULTS"
  else
    echo "[size] tools/code_size.sh FAILED" >> "$RESULTS"
  fi
  # The test runs moved the bazel-bin link to their trees (fastbuild, --platform_suffix): point
  # it back at the optimized build the README's bazel-bin/... commands use (cached after `build`).
  build_opt || true
  echo
  echo "== test results (plain, asan+ubsan, tsan, fuzz) =="
  cat "$RESULTS"
  local passed failed
  passed=$(grep -cE ' PASSED' "$RESULTS" || true)
  failed=$(grep -cvE ' PASSED' "$RESULTS" || true)
  rm -f "$RESULTS"
  echo "${passed} passed, ${failed} failed"
  [[ "$failed" == 0 ]]
}

# Runs every FUZZ_TARGETS entry for its budget on an empty corpus in a scratch directory (tmpfs
# when there is one); appends "[fuzz] TARGET PASSED/FAILED in Ns" to $RESULTS when it is set.
fuzz() {
  tools/install-deps.sh
  local targets=() entry target seconds
  for entry in "${FUZZ_TARGETS[@]}"; do targets+=("${entry%% *}"); done
  local results=${RESULTS:-/dev/null}
  if ! CC=clang bazel build $(bazel_flags) "${FUZZ_FLAGS[@]}" "${targets[@]}"; then
    echo "[fuzz] ${targets[*]} FAILED TO BUILD" >> "$results"
    return 1
  fi
  local bin status=0 scratch base=/dev/shm
  [[ -d $base && -w $base ]] || base=${TMPDIR:-/tmp}
  bin="$(CC=clang bazel info $(bazel_flags) "${FUZZ_FLAGS[@]}" bazel-bin 2>/dev/null)"
  for entry in "${FUZZ_TARGETS[@]}"; do
    target=${entry%% *}
    seconds=${XTIMER_FUZZ_SECONDS:-${entry##* }}
    scratch=$(mktemp -d "$base/xtimer-fuzz.XXXXXX")
    mkdir -p "$scratch/corpus" "$scratch/tmp"
    echo "== fuzz: $target for ${seconds}s"
    local path="$bin/${target#//}"
    path=${path/://}
    if (cd "$scratch" && TEST_TMPDIR="$scratch/tmp" "$path" -max_total_time="$seconds" \
          -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 corpus 2>&1 | tail -n 12); then
      echo "[fuzz] $target PASSED in ${seconds}s" >> "$results"
    else
      local keep=${XTIMER_FUZZ_ARTIFACTS:-/tmp/xtimer-fuzz-artifacts}
      mkdir -p "$keep" && mv "$scratch"/crash-* "$scratch"/timeout-* "$scratch"/oom-* "$keep"/ 2>/dev/null
      echo "[fuzz] $target FAILED (inputs kept in $keep; reproduce: $path INPUT)" >> "$results"
      status=1
    fi
    rm -rf "$scratch"
  done
  return $status
}

# Runs the demo (demo/run_xtimer_demo.sh) with the arguments given: `tools/dev.sh demo --fault
# hang`, `--healthy`, `--keep`, `--python` (docs/demo.md).
demo() {
  build
  local bin
  bin="$(opt_bin_dir)"
  demo/run_xtimer_demo.sh --bin-dir "$bin" "$@"
}

case "${1:-}" in
  demo) shift; demo "$@" ;;
  test) test_all ;;
  build) build ;;
  fuzz) fuzz ;;
  -h|--help|help) usage ;;
  --version) cat VERSION ;;
  *) usage >&2; exit 2 ;;
esac

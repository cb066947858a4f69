#!/bin/bash
# Stack capture latency for 8 local ranks under a real xtimerd (stacktrace/capture_bench.py):
# builds the programs with -c opt (the bazel-* links are left alone), then calls DumpStack RUNS
# times (default 10) and prints the figures. Results: docs/benchmarks.md.
#   stacktrace/capture_bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
TARGETS=(//launcher:xtimer-launch //daemon:xtimerd //hook:libxtimer.so //test/gpusim:gpusim-run
         //test/gpusim:libs //demo:train_step //demo:diag_job)
# shellcheck disable=SC2086
bazel build -c opt --symlink_prefix=/ ${XTIMER_BAZEL_FLAGS:-} "${TARGETS[@]}" >&2
# shellcheck disable=SC2086
bin="$(bazel info -c opt ${XTIMER_BAZEL_FLAGS:-} bazel-bin 2>/dev/null)"
exec python3 stacktrace/capture_bench.py "$bin/launcher/xtimer-launch" "$bin/daemon/xtimerd" \
  "$bin/hook/libxtimer.so" "$bin/test/gpusim/gpusim-run" "$bin/demo/train_step" demo/launch.py \
  "$bin/demo/diag_job" "${1:-10}"

#!/usr/bin/env bash
# tools/bench/daemon_bench.sh: xtimerd's costs, printed by //daemon:daemon_bench (-c opt):
#   ingest  records/s through real rings into the aggregator on one core (thread CPU time)
#   scrape  GET /metrics latency through the real MetricsServer with 16 synthetic ranks
#   load    CPU of the ring-reader thread (real RingServer, Unix-socket registration) while 8
#           writer processes' rings each receive 10k records/s: first N s, then N s steady
#   real    the same load on the real xtimerd: CPU, faults, /metrics, RSS after the ranks leave
# Options: --seconds N (default 10) and any other daemon_bench flag (--rate, --poll-ms, --only,
#          --xtimerd PATH).
# Results: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
case "${1:-}" in
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --version) cat "./VERSION"; exit 0 ;;
esac
echo "building //daemon:daemon_bench (-c opt)..." >&2
# --symlink_prefix=/: leave the bazel-* convenience links (fastbuild) alone.
# shellcheck disable=SC2086
bazel build -c opt --symlink_prefix=/ ${XTIMER_BAZEL_FLAGS:-} //daemon:daemon_bench >&2
bin="$(bazel info -c opt ${XTIMER_BAZEL_FLAGS:-} bazel-bin 2>/dev/null)/daemon/daemon_bench"
echo "== xtimerd benchmark on $(nproc) cores ($(uname -m))"
# The load phase logs every registration on stderr; keep stdout to the figures.
"$bin" "$@" 2>/dev/null

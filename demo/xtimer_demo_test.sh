#!/usr/bin/env bash
# xtimer_demo_test.sh SCENARIO [RANK]: runs demo/run_xtimer_demo.sh as a user does (the default,
# `--healthy` or `--fault SCENARIO --rank RANK`) on its own ports and root, and checks what it
# prints against what xtimer wrote: the verdict names RANK and the scenario's cause (from `xtimer
# analyze` of the dump and live from the daemons), every file it names exists, the trace opens in
# Perfetto's trace processor (timeline/perfetto_tp/check_trace.py: it and the project's decoder
# must agree), the report opens in headless Chromium and its DOM holds the same verdict, and the
# cost line gives the hook's share. SCENARIO default is the default demo (slow-loader, rank 2);
# `healthy` also checks --keep (the daemons answer after the script ended). Cwd: the runfiles root.
set -euo pipefail
source demo/testlib.sh
source test/browser/chromium.sh
scenario=$1
rank=${2:-}
OUT="$TMP/demo.out"
root=$(mktemp -d /tmp/xtimer-demo-test.XXXXXX)  # short: the daemons' socket paths
trap 'for i in 0 1; do kill "$(cat "$root/node$i/xtimerd.pid" 2>/dev/null)" 2>/dev/null || true; done; rm -rf "$root"' EXIT
read -r m0 m1 c0 c1 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')

args=(--bin-dir "$PWD" --root "$root" --metrics-ports "$m0,$m1" --control-ports "$c0,$c1")
case "$scenario" in
  default) ;;
  healthy) args+=(--healthy --keep) ;;
  *) args+=(--fault "$scenario" --rank "$rank") ;;
esac
start=$SECONDS
set +e
demo/run_xtimer_demo.sh "${args[@]}" >"$OUT" 2>&1
RC=$?
set -e
echo "run_xtimer_demo.sh ${args[*]}: exit $RC after $((SECONDS - start)) s"
expect_rc 0 "run_xtimer_demo.sh"
cat "$OUT"

# Ordered output: node 0's heading, its ranks 0-3 in order, then node 1's, then the findings.
order=$(grep -oE '^node [01] |^  rank [0-7] |^== what xtimer found' "$OUT" | tr -s ' ' | tr '\n' '|')
[[ "$order" == "node 0 | rank 0 | rank 1 | rank 2 | rank 3 |node 1 | rank 4 | rank 5 | rank 6 | rank 7 |== what xtimer found|" ]] \
  || fail "output order: $order"
found=$(sed -n '/^== what xtimer found/,$p' "$OUT")

# The verdict, from the dump and live; what the report's DOM must say.
case "$scenario" in
  default) want="Straggler: rank 2 \(.*\), cause host"; live="straggler rank 2, cause host"
           dom=("Rank 2 on communicator" "cause host") ;;
  slow-loader) want="Straggler: rank $rank \(.*\), cause host"; live="straggler rank $rank, cause host"
               dom=("Rank $rank on communicator" "cause host") ;;
  slow-compute) want="Straggler: rank $rank \(.*\), cause compute"; live="straggler rank $rank, cause compute"
                dom=("Rank $rank on communicator" "cause compute") ;;
  slow-link) want="Slow link: communicator 0x[0-9a-f]+ \(pp\), ranks? ([0-9, and]+ )?$rank\b"
             live="straggler communicator 0x[0-9a-f]+, cause link"; dom=("cause link") ;;
  hang) want="Hang \(never_issued\): culprit rank $rank "; live="hang never_issued of rank $rank"
        dom=("Hang (never_issued" "rank $rank never issued") ;;
  crash) want="Hang \(exited\): culprit rank $rank "; live="hang exited of rank $rank"
         dom=("Hang (exited" "rank $rank exited: signal 11") ;;
  mismatch) want="Hang \(mismatch\): culprit rank $rank "; live="hang mismatch of rank $rank"
            dom=("Hang (mismatch" "rank $rank issued") ;;
  healthy) want="No problem found: no hang, no straggler, no slow link"; live="no problem\."
           dom=("No stragglers") ;;
  *) fail "unknown scenario $scenario" ;;
esac
flat=$(tr '\n' ' ' <<<"$found" | tr -s ' ')  # its sentences are wrapped at 100 columns
grep -Eq -- "$want" <<<"$flat" || fail "no verdict matching /$want/"
grep -Eq -- "Live, from the daemons \([^)]*\): $live" <<<"$flat" || fail "the live verdict is not /$live/"
if [[ $scenario == healthy ]]; then
  if grep -Eq "Straggler:|Slow link:|Hang \(" <<<"$flat"; then fail "a healthy run reports a problem"; fi
fi
grep -Eq "What xtimer cost: the hook's own time .* at most [0-9.]+% \(budget 1%" <<<"$flat" \
  || fail "no cost line"

# The files it names.
trace=$(awk '$1 == "trace" {print $2}' <<<"$found")
report=$(awk '$1 == "report" {print $2}' <<<"$found")
[[ -s "$trace" ]] || fail "the trace it names ($trace) does not exist"
[[ -s "$report" ]] || fail "the report it names ($report) does not exist"
if [[ $scenario =~ ^(hang|crash|mismatch)$ ]]; then
  svg=$(grep -oE 'flame graph \(open in a browser\): \S+' <<<"$found" | awk '{print $NF}')
  [[ -s "$svg" ]] || fail "the flame graph it names ($svg) does not exist"
  grep -Eq "^    ranks? [0-9,-]+ \([0-9]+\) in " <<<"$found" || fail "no merged stacks summary"
fi

python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs timeline/trace_summary \
  "$trace" || fail "Perfetto's trace processor on $trace"

chromium_or_skip
chromium_headless "$TMP" --dump-dom "file://$report" >"$TMP/dom" \
  || fail "chromium on $report: $(tail -5 "$TMP/browser.err")"
for text in "${dom[@]}"; do
  grep -qF -- "$text" "$TMP/dom" || fail "the report's DOM lacks '$text': $(head -c 600 "$TMP/dom")"
done

if [[ $scenario == healthy ]]; then  # --keep: the daemons still answer
  for port in "$m0" "$m1"; do
    curl -sf "127.0.0.1:$port/metrics" >"$TMP/metrics" || fail "--keep: the daemon on :$port is gone"
    grep -q '^xtimer_rank_up' "$TMP/metrics" || fail "--keep: the daemon on :$port has no rank"
  done
fi
echo PASS

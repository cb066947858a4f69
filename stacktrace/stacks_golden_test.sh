#!/bin/bash
# xtimer stacks on real captures: testdata/sim_cpp_hang/ holds the .stacks files a real xtimerd
# wrote (DumpStack) for the 4 ranks of //demo:diag_job on the GPU simulator, tp2-pp2, rank 2
# stopped in its own host code (--stop-before-collective 2:3, StopInHostCode sleeping in
# pause()), ranks 0, 1 and 3 waiting in cudaEventSynchronize through the hook; each rank has the
# hook's xtimer-poller thread (module paths shortened to /opt/xtimer/bin/). The summary and the
# folded stacks are compared with goldens, by default and with --show-xtimer:
#   default        every group named by the application's frame (StopInHostCode, WaitForStep),
#                  no xtimer-poller thread and no frame of libxtimer.so in the outputs
#   --show-xtimer  the poller and the hook's frames (xtimer::hook::SyncCall<...>) are there
# Regenerate the goldens: XTIMER_UPDATE_GOLDEN=$PWD bazel run //stacktrace:stacks_golden_test
set -u
XT=cli/xtimer
IN=stacktrace/testdata/sim_cpp_hang
TMP=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }

"$XT" stacks --help | grep -q -- "--show-xtimer" || fail "--help does not list --show-xtimer"
# Runfiles are symbolic links, which xtimer stacks does not follow: read a copy.
mkdir -p "$TMP/in" && cp -L "$IN"/*.stacks "$TMP/in/" || fail "cannot copy $IN"
for variant in default show-xtimer; do
  flags=()
  [[ $variant == show-xtimer ]] && flags=(--show-xtimer)
  out="$TMP/$variant"
  "$XT" stacks "$TMP/in" -o "$out" -q "${flags[@]}" || fail "$variant: xtimer stacks exited $?"
  for f in summary.txt stacks.folded; do
    golden="$IN.$variant.$f"
    if [[ -n "${XTIMER_UPDATE_GOLDEN:-}" ]]; then
      cp "$out/$f" "$XTIMER_UPDATE_GOLDEN/$golden"
      echo "updated $golden"
    else
      diff -u "$golden" "$out/$f" || fail "$variant: $f differs from $golden"
    fi
  done
done
# Beyond the goldens: what each variant must (not) show, in every output.
for f in summary.txt stacks.folded stacks.svg; do
  grep -q "xtimer-poller\|libxtimer\|xtimer::" "$TMP/default/$f" && fail "default $f shows xtimer"
done
grep -q "^rank 2 (1) in StopInHostCode (diag_job.cu:409) <- " "$TMP/default/summary.txt" \
  || fail "rank 2 not named by its application function: $(cat "$TMP/default/summary.txt")"
grep -q "^ranks 0-1,3 (3) in WaitForStep (diag_job.cu:500) <- .* via .*cudaEventSynchronize$" \
  "$TMP/default/summary.txt" || fail "ranks 0-1,3: $(cat "$TMP/default/summary.txt")"
for f in stacks.folded stacks.svg; do
  grep -q "thread xtimer-poller" "$TMP/show-xtimer/$f" || fail "--show-xtimer: no poller in $f"
  grep -q "xtimer::hook::SyncCall" "$TMP/show-xtimer/$f" || fail "--show-xtimer: no hook frame in $f"
done
grep -q "origin: xtimer" "$TMP/show-xtimer/stacks.svg" || fail "--show-xtimer: no xtimer origin"
echo PASS

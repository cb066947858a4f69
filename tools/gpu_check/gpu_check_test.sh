#!/usr/bin/env bash
# gpu_check.py on a machine without a GPU: binaries and daemon rows pass, then exit status 3 with
# a line that says the remaining checks need an NVIDIA GPU. Args: gpu_check.py, then the binaries.
set -uo pipefail
check=$1
# Short paths: the daemon's socket path must fit a Unix socket address (107 bytes).
bin=$(mktemp -d "${XTIMER_TEST_TMP:-/tmp}/xtgc-bin.XXXXXX")
keep=$(mktemp -d "${XTIMER_TEST_TMP:-/tmp}/xtgc.XXXXXX")
trap 'rm -rf "$bin" "$keep"' EXIT
for f in "$2" "$3" "$4"; do ln -s "$(readlink -f "$f")" "$bin/$(basename "$f")"; done
# No nvidia-smi on PATH, whatever this machine has.
out=$(PATH=/usr/bin:/bin /usr/bin/python3 "$check" --bin "$bin" --keep "$keep" 2>&1)
rc=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[[ $rc -eq 3 ]] || fail "exit status $rc, want 3"
grep -q '^binaries  *PASS' <<<"$out" || fail "no binaries PASS row"
grep -q '^daemon  *PASS' <<<"$out" || fail "no daemon PASS row"
grep -q 'need an NVIDIA GPU' <<<"$out" || fail "does not say that the rest needs a GPU"
grep -q '^| gpu | n/a |' <<<"$out" || fail "the table has no gpu row"
# A missing binary is a failure that says what to build.
rm "$bin/xtimerd"
out=$(PATH=/usr/bin:/bin /usr/bin/python3 "$check" --bin "$bin" 2>&1)
rc=$?
[[ $rc -eq 1 ]] || fail "missing xtimerd: exit status $rc, want 1"
grep -q 'missing in .*xtimerd.*tools/dev.sh build' <<<"$out" || fail "missing xtimerd not named: $out"
echo PASS

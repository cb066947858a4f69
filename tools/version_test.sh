#!/usr/bin/env bash
# Every user-facing binary and script answers --version with exit 0 and the one version string,
# the first line of //:VERSION. Arguments: the VERSION file, then the programs (a program's
# arguments follow it after a ':', e.g. "path/xtimer:dump").
set -uo pipefail
want="$(head -n1 "$1")"
shift
[[ "$want" == xtimer\ * ]] || { echo "VERSION does not start with 'xtimer ': '$want'"; exit 1; }
failed=0
for spec in "$@"; do
  prog="${spec%%:*}"
  sub=()
  [[ "$spec" == *:* ]] && sub=("${spec#*:}")
  out="$("$prog" "${sub[@]}" --version 2>&1)"
  rc=$?
  if [[ $rc -ne 0 || "$out" != "$want" ]]; then
    echo "FAIL: $prog ${sub[*]} --version: exit $rc, printed '$out' (want '$want')"
    failed=1
  else
    echo "ok: $prog ${sub[*]} --version"
  fi
done
exit $failed

#!/usr/bin/env bash
# tools/code_size.sh: the size limits of production code (issue 19), checked on the tree as git
# tracks it: no file over 800 lines and no function over 110 lines (universal-ctags finds the
# functions and their ends). Tests, benchmarks, fuzzers, demo/ and the GPU simulator (its API
# tables are long by nature) are left out. Prints each offender; exits 1 if there is one.
#   --max-file N, --max-function N: other limits (defaults 800, 110)
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
max_file=800
max_function=110
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-file) max_file=$2; shift 2 ;;
    --max-function) max_function=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat VERSION; exit 0 ;;
    *) echo "code_size.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v ctags >/dev/null || { echo "code_size.sh: ctags (universal-ctags) is required" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' \
  | grep -vE '(_test|_fuzzer|_bench)\.(cc|h|cu)$|^(demo|test/gpusim)/|/bench/|/testdata/|^test/')
bad=0
for f in "${files[@]}"; do
  n=$(wc -l <"$f")
  if (( n > max_file )); then echo "file $f: $n lines (over $max_file)"; bad=1; fi
done
# One tab-separated line per function: NAME FILE START END.
while IFS=$'\t' read -r name file start end; do
  len=$((end - start + 1))
  if (( len > max_function )); then
    echo "function $name in $file:$start: $len lines (over $max_function)"; bad=1
  fi
done < <(ctags --languages=C++ --map-C++=+.cu --kinds-C++=f --fields=+ne -o - "${files[@]}" \
  | awk -F'\t' '{s = ""; e = ""; for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) s = substr($i, 6);
                  if ($i ~ /^end:/) e = substr($i, 5) } if (s != "" && e != "") print $1 "\t" $2 "\t" s "\t" e}')
echo "code_size: ${#files[@]} files checked (file <= $max_file lines, function <= $max_function)"
exit $bad

#!/usr/bin/env bash
# hook/bench/python_trace_bench.sh: the Python tracer's cost per call (docs/benchmarks.md
# "Python tracing"), in ns: python_calls.py on Debian's python3 (3.11) and pyenv's 3.8, 3.12 and
# 3.13, plain, with libxtimer.so (-c opt) preloaded and XTIMER_PY_TRACE unset (the defaults,
# none of which the script imports), and preloaded with XTIMER_PY_TRACE=__main__:traced; no
# daemon (the ring fills; the hook's cost is the same). Runs alternate the three modes;
# each figure is the median of the runs' best-of-rounds ns per loop iteration.
#   --runs N     runs per Python and mode (default 5)
#   --calls N    calls per round (default 2000000); rounds per run: 5
#   --instructions  instructions per call instead (callgrind, the main thread only): for each
#                Python, (Ir(2N) - Ir(N)) / N of the untraced and the traced function alone,
#                plain and with XTIMER_PY_TRACE=__main__:traced; N = 20000
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
runs=5
calls=2000000
instructions=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --instructions) instructions=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --version) cat VERSION; exit 0 ;;
    *) echo "python_trace_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
echo "building (-c opt)..." >&2
bazel build --symlink_prefix=/ -c opt //hook:libxtimer.so >&2
lib="$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)/hook/libxtimer.so"
script=hook/bench/python_calls.py
pythons=(/usr/bin/python3)
for v in 3.8 3.12 3.13; do
  p=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | tail -1 || true)
  [[ -n "$p" ]] && pythons+=("$p")
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Instructions of the main thread of `python_calls.py N 1 ONLY` under callgrind: ir PY N ONLY [ENV...]
ir() {
  local py=$1 n=$2 only=$3 dir
  shift 3
  dir=$(mktemp -d)
  env "$@" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg" \
    "$py" "$script" "$n" 1 "$only" >/dev/null 2>&1
  callgrind_annotate "$(ls "$dir"/cg-01 "$dir"/cg*-01 2>/dev/null | head -1)" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
  rm -rf "$dir"
}
if (( instructions )); then
  n=20000
  hooked=(LD_PRELOAD="$lib" XTIMER_DAEMON_SOCKET=/nonexistent/xtimerd.sock
          XTIMER_PY_TRACE=__main__:traced)
  printf '%-8s %12s %14s %12s %14s\n' python plain_call untraced_on traced_on traced_+instr
  for py in "${pythons[@]}"; do
    declare -A per=()
    for mode in plain hooked; do
      for f in untraced traced; do
        if [[ $mode == plain ]]; then env_=(PYTHONHASHSEED=0); else env_=(PYTHONHASHSEED=0 "${hooked[@]}"); fi
        a=$(ir "$py" "$n" "$f" "${env_[@]}")
        b=$(ir "$py" $((2 * n)) "$f" "${env_[@]}")
        per[$mode.$f]=$(( (b - a) / n ))
      done
    done
    version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    printf '%-8s %12d %14d %12d %14d\n' "$version" "${per[plain.untraced]}" \
      "${per[hooked.untraced]}" "${per[hooked.traced]}" \
      $(( per[hooked.traced] - per[plain.traced] ))
    unset per
  done
  exit 0
fi
printf '%-8s %9s %11s %11s %11s %11s %11s\n' python plain_ns defaults_ns 'defaults_%' \
  untraced_ns 'untraced_%' traced_+ns
for py in "${pythons[@]}"; do
  plain=() defaults=() untraced=() traced=()
  for ((r = 0; r < runs; ++r)); do
    read -r _ u t < <("$py" "$script" "$calls" 5 | awk '{print $1, $3, $5}')
    plain+=("$u")
    read -r _ u t < <(LD_PRELOAD="$lib" XTIMER_DAEMON_SOCKET=/nonexistent/xtimerd.sock \
      "$py" "$script" "$calls" 5 2>/dev/null | awk '{print $1, $3, $5}')
    defaults+=("$u")
    read -r mode u t < <(LD_PRELOAD="$lib" XTIMER_DAEMON_SOCKET=/nonexistent/xtimerd.sock \
      XTIMER_PY_TRACE=__main__:traced "$py" "$script" "$calls" 5 2>/dev/null |
      awk '{print $1, $3, $5}')
    [[ "$mode" == traced ]] || { echo "$py: the tracer did not start ($mode)" >&2; exit 1; }
    untraced+=("$u")
    traced+=("$t")
  done
  p=$(printf '%s\n' "${plain[@]}" | median)
  d=$(printf '%s\n' "${defaults[@]}" | median)
  u=$(printf '%s\n' "${untraced[@]}" | median)
  t=$(printf '%s\n' "${traced[@]}" | median)
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  awk -v v="$version" -v p="$p" -v d="$d" -v u="$u" -v t="$t" 'BEGIN {
    printf "%-8s %9.1f %11.1f %10.1f%% %11.1f %10.1f%% %11.1f\n", v, p, d, 100 * (d - p) / p,
           u, 100 * (u - p) / p, t - p }'
done

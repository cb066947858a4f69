#!/usr/bin/env bash
# tools/python_layout.sh: prints, for each CPython given (default: Debian's /usr/bin/python3 and
# every pyenv version from 3.8 to 3.12), the offsets that hook/python_layout.cc tabulates,
# measured with offsetof against that interpreter's own headers (internal ones included).
# Compare its output with the table when a new version or build is added. Needs gcc.
#   tools/python_layout.sh [PYTHON...]
set -euo pipefail
cd_root="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
case "${1:-}" in
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --version) head -n1 "$cd_root/VERSION"; exit 0 ;;
esac
pythons=("$@")
if [[ ${#pythons[@]} -eq 0 ]]; then
  pythons=(/usr/bin/python3)
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.{8,9,10,11,12}.*/bin/python3; do
    [[ -x "$p" ]] && pythons+=("$p")
  done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/layout.c" <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_interp.h"
#endif
#include "internal/pycore_pystate.h"
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#else
#include "frameobject.h"
#endif
#define P(name, v) printf("  %-22s %zu\n", name, (size_t)(v))
int main(void) {
  printf("%s\n", PY_VERSION);
  P("interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
  P("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
  P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#else
  P("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
  P("tstate_next", offsetof(PyThreadState, next));
  P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
  P("tstate_frame", offsetof(PyThreadState, cframe));
  P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
  P("frame_previous", offsetof(_PyInterpreterFrame, previous));
  P("frame_code", offsetof(_PyInterpreterFrame, f_code));
  P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
  P("frame_owner", offsetof(_PyInterpreterFrame, owner));
  P("code_linetable", offsetof(PyCodeObject, co_linetable));
  P("code_instructions", offsetof(PyCodeObject, co_code_adaptive));
#else
  P("tstate_frame", offsetof(PyThreadState, frame));
  P("frame_previous", offsetof(PyFrameObject, f_back));
  P("frame_code", offsetof(PyFrameObject, f_code));
  P("frame_instr", offsetof(PyFrameObject, f_lasti));
#if PY_VERSION_HEX >= 0x030a0000
  P("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
  P("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#endif
  P("code_filename", offsetof(PyCodeObject, co_filename));
  P("code_name", offsetof(PyCodeObject, co_name));
  P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("object_type", offsetof(PyObject, ob_type));
  P("unicode_length", offsetof(PyASCIIObject, length));
  P("unicode_state", offsetof(PyASCIIObject, state));
  P("unicode_ascii_data", sizeof(PyASCIIObject));
  P("unicode_compact_data", sizeof(PyCompactUnicodeObject));
  P("bytes_size", offsetof(PyVarObject, ob_size));
  P("bytes_data", offsetof(PyBytesObject, ob_sval));
  return 0;
}
C
for python in "${pythons[@]}"; do
  include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  gcc -w -I"$include" -o "$tmp/layout" "$tmp/layout.c"
  echo "$python: $("$tmp/layout")"
done

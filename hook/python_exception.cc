#include "hook/python_exception.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "hook/crash_report.h"
#include "hook/python_stacks.h"

namespace xtimer {
namespace hook {
namespace {

using IsInitializedFn = int (*)();
using AddPendingCallFn = int (*)(int (*)(void*), void*);
using RunSimpleStringFn = int (*)(const char*);

std::atomic<bool> g_installed{false};

// Called by the audit hook through ctypes (the GIL released meanwhile: other threads run while
// the daemon symbolizes). Arrays of n UTF-8 strings and lines, innermost frame first.
int ReportFromPython(const char* type, const char* message, int n,
                     const char* const* functions, const char* const* files,
                     const int* lines) {
  if (n < 0 || (n > 0 && (functions == nullptr || files == nullptr || lines == nullptr))) n = 0;
  if (n > kMaxPythonExceptionFrames) n = kMaxPythonExceptionFrames;
  std::vector<PythonExceptionFrame> frames(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) frames[i] = {functions[i], files[i], lines[i]};
  return ReportPythonException(type, message, frames.data(), n);
}

// The pending call: main thread, GIL held, between two bytecodes.
int InstallAuditHook(void*) {
  auto run = reinterpret_cast<RunSimpleStringFn>(FindPythonSymbol("PyRun_SimpleString"));
  if (run == nullptr) return 0;
  const std::string source =
      PythonExceptionHookSource(reinterpret_cast<uintptr_t>(&ReportFromPython));
  run(source.c_str());  // prints and clears its own errors; the call itself never fails
  return 0;
}

}  // namespace

// Runs in __main__'s namespace as one expression, so it leaves no name there. Every step is
// inside try: an audit hook that raises would stop the traceback from being printed. No module
// is imported at install time (sys is always there); ctypes only when an exception is reported.
// An interactive session (python -i, the REPL) keeps running after an exception: not reported.
std::string PythonExceptionHookSource(uintptr_t report_address) {
  static const char kSource[] = R"PY(__import__("builtins").exec(r'''
def _xtimer_install(address):
    import sys

    def text(value, limit=%zu):
        try:
            s = value if isinstance(value, str) else str(value)
        except BaseException:
            s = "<unprintable %%s>" %% type(value).__name__
        return s.encode("utf-8", "backslashreplace")[:limit]

    def report(etype, value, tb):
        if getattr(sys, "ps1", None) is not None or sys.flags.interactive:
            return
        import ctypes
        frames = []
        while tb is not None:
            code = tb.tb_frame.f_code
            frames.append((text(code.co_name), text(code.co_filename), tb.tb_lineno or 0))
            tb = tb.tb_next
        frames = frames[::-1][:%d]
        name = getattr(etype, "__qualname__", None) or getattr(etype, "__name__", "?")
        module = getattr(etype, "__module__", None)
        if module not in (None, "builtins", "__main__"):
            name = "%%s.%%s" %% (module, name)
        n = len(frames)
        strings = ctypes.c_char_p * n
        fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                              strings, strings, ctypes.c_int * n)(address)
        fn(text(name), text(value), n, strings(*[f[0] for f in frames]),
           strings(*[f[1] for f in frames]), (ctypes.c_int * n)(*[f[2] for f in frames]))

    def audit(event, args):
        if event != "sys.excepthook":
            return
        try:
            report(args[1], args[2], args[3])
        except BaseException:
            pass

    sys.addaudithook(audit)

_xtimer_install(%llu)
''', {"__name__": "xtimer_excepthook"}))PY";
  std::vector<char> buf(sizeof(kSource) + 64);
  snprintf(buf.data(), buf.size(), kSource, kMaxPythonExceptionText, kMaxPythonExceptionFrames,
           static_cast<unsigned long long>(report_address));
  return buf.data();
}

bool InstallPythonExceptionReports(std::string* error) {
  auto initialized = reinterpret_cast<IsInitializedFn>(FindPythonSymbol("Py_IsInitialized"));
  auto add = reinterpret_cast<AddPendingCallFn>(FindPythonSymbol("Py_AddPendingCall"));
  if (initialized == nullptr || add == nullptr || initialized() == 0) return true;
  if (g_installed.exchange(true)) return true;
  if (add(&InstallAuditHook, nullptr) != 0) {
    *error = "Py_AddPendingCall refused the audit hook's installation";
    return false;
  }
  return true;
}

}  // namespace hook
}  // namespace xtimer

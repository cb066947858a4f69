// Uncaught Python exceptions (docs/crash.md "Uncaught Python exceptions"): when the hook starts
// in a process whose CPython is initialized, it asks the interpreter, through Py_AddPendingCall
// (CPython runs the call on the main thread between two bytecodes, holding the GIL: the path
// Python's own signal handlers take), to add an audit hook (PEP 578, CPython 3.8+). On the
// "sys.excepthook" event, raised for every uncaught exception just before whatever
// sys.excepthook is installed runs, the audit hook hands the exception's type, message and
// traceback frames to ReportPythonException (hook/crash_report.h). sys.excepthook itself is never
// touched, so the application's hooks, set before or after, run as without xtimer.
#ifndef XTIMER_HOOK_PYTHON_EXCEPTION_H_
#define XTIMER_HOOK_PYTHON_EXCEPTION_H_

#include <cstdint>
#include <string>

namespace xtimer {
namespace hook {

// Description: queues the installation of the audit hook (once per process). Does nothing in a
// process without an initialized CPython.
// Thread safety: any thread, GIL held or not; not from a signal handler.
// Return: false with *error when the interpreter refused the pending call.
bool InstallPythonExceptionReports(std::string* error);

// The Python source that the pending call runs (exposed for tests): `report_address` is the
// address of the C entry point the audit hook calls through ctypes.
std::string PythonExceptionHookSource(uintptr_t report_address);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_PYTHON_EXCEPTION_H_

#include "hook/python_trace.h"

#include <sys/types.h>

#include <atomic>
#include <cstddef>

#include "format/python_spans.h"
#include "hook/budget.h"
#include "hook/log.h"
#include "hook/python_spans.h"
#include "hook/python_stacks.h"
#include "util/clock.h"

namespace xtimer {
namespace hook {
namespace internal {

// The profile function's events on this thread (initial-exec TLS of external, hidden linkage, as
// python_spans.cc's t_spans).
__thread uint32_t t_profile_events __attribute__((tls_model("initial-exec"), visibility("hidden")));

}  // namespace internal

const char kDefaultPythonTraceSpecs[] =
    "torch.utils.data.dataloader:_BaseDataLoaderIter.__next__@data,"
    "torch.cuda:synchronize,"
    "torch.autograd:backward,"
    "torch._tensor:Tensor.backward,"
    "torch.optim.optimizer:Optimizer.step@step,"
    "torch.serialization:save,"
    "megatron.training.training:train_step@step,"
    "megatron.training:train_step@step";

namespace {

// CPython's objects stay opaque here: only stable entry points (3.8 to 3.13) are called, each
// found with FindPythonSymbol (also in a libpython loaded RTLD_LOCAL).
struct PyObj;
using CFunc = PyObj* (*)(PyObj* self, PyObj* const* args, ssize_t nargs);
struct MethodDef {  // PyMethodDef
  const char* name;
  CFunc meth;
  int flags;
  const char* doc;
};
constexpr int kMethFastcall = 0x0080;  // METH_FASTCALL
constexpr int kFileInput = 257;        // Py_file_input
// PyTrace_* of the profile function, and the names sys.setprofile's functions receive.
constexpr int kTraceCall = 0, kTraceReturn = 3, kTraceEvents = 8;
const char* const kWhatNames[kTraceEvents] = {"call",   "exception",   "line",     "return",
                                              "c_call", "c_exception", "c_return", "opcode"};
// PyFrameObject.f_code on 3.8 (PyObject_VAR_HEAD, f_back): 3.9+ has PyFrame_GetCode.
constexpr size_t kFrameCodeOffset38 = 32;

using ProfileFn = int (*)(PyObj* obj, PyObj* frame, int what, PyObj* arg);

struct Api {
  int (*is_initialized)();
  int (*add_pending_call)(int (*)(void*), void*);
  PyObj* (*cfunction_new)(MethodDef*, PyObj*, PyObj*);
  PyObj* (*dict_new)();
  int (*dict_set)(PyObj*, const char*, PyObj*);
  PyObj* (*builtins)();
  PyObj* (*run_string)(const char*, int, PyObj*, PyObj*, void*);
  void (*err_print)();
  void (*err_clear)();
  PyObj* (*err_occurred)();
  PyObj* (*unicode_from)(const char*);
  PyObj* (*unicode_intern)(const char*);
  const char* (*unicode_utf8)(PyObj*);
  long (*long_as)(PyObj*);
  PyObj* (*long_from)(long);
  void (*incref)(PyObj*);
  void (*decref)(PyObj*);
  PyObj* none;
  void (*set_profile)(ProfileFn, PyObj*);
  PyObj* (*frame_get_code)(PyObj*);  // 3.9+; null on 3.8
  int (*fast_to_locals)(PyObj*);
  void (*locals_to_fast)(PyObj*, int);
  int (*traceback_here)(PyObj*);
  PyObj* (*call)(PyObj*, ...);  // PyObject_CallFunctionObjArgs
};

Api g_api;
PyObj* g_what[kTraceEvents];
std::string* g_specs = nullptr;  // lives as long as the process (read by the pending call)
bool g_explicit = false;         // XTIMER_PY_TRACE was set
std::atomic<bool> g_installed{false};

template <typename F>
bool Find(const char* name, F* out) {
  *out = reinterpret_cast<F>(FindPythonSymbol(name));
  return *out != nullptr;
}

bool ResolveApi(Api* a) {
  bool ok = Find("Py_IsInitialized", &a->is_initialized) &&
            Find("Py_AddPendingCall", &a->add_pending_call) &&
            Find("PyCFunction_NewEx", &a->cfunction_new) && Find("PyDict_New", &a->dict_new) &&
            Find("PyDict_SetItemString", &a->dict_set) &&
            Find("PyEval_GetBuiltins", &a->builtins) &&
            Find("PyRun_StringFlags", &a->run_string) && Find("PyErr_Print", &a->err_print) &&
            Find("PyErr_Clear", &a->err_clear) && Find("PyErr_Occurred", &a->err_occurred) &&
            Find("PyUnicode_FromString", &a->unicode_from) &&
            Find("PyUnicode_InternFromString", &a->unicode_intern) &&
            Find("PyUnicode_AsUTF8", &a->unicode_utf8) && Find("PyLong_AsLong", &a->long_as) &&
            Find("PyLong_FromLong", &a->long_from) && Find("Py_IncRef", &a->incref) &&
            Find("Py_DecRef", &a->decref) && Find("PyEval_SetProfile", &a->set_profile) &&
            Find("PyFrame_FastToLocalsWithError", &a->fast_to_locals) &&
            Find("PyFrame_LocalsToFast", &a->locals_to_fast) &&
            Find("PyTraceBack_Here", &a->traceback_here) &&
            Find("PyObject_CallFunctionObjArgs", &a->call);
  a->none = static_cast<PyObj*>(FindPythonSymbol("_Py_NoneStruct"));
  Find("PyFrame_GetCode", &a->frame_get_code);  // optional
  return ok && a->none != nullptr;
}

PyObj* None() {
  g_api.incref(g_api.none);
  return g_api.none;
}

long IntArg(PyObj* const* args, ssize_t nargs, ssize_t i) {
  if (i >= nargs) return 0;
  const long v = g_api.long_as(args[i]);
  if (v == -1 && g_api.err_occurred() != nullptr) g_api.err_clear();
  return v;
}

// sys.monitoring's PY_START and PY_RESUME: (code, offset).
PyObj* Start(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (nargs >= 1) {
    if (const pyspans::Traced* t = pyspans::Find(args[0])) pyspans::Enter(*t);
  }
  return None();
}

// PY_RETURN, PY_YIELD: (code, offset, value); PY_UNWIND: (code, offset, exception).
PyObj* Stop(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (nargs >= 1) {
    if (const pyspans::Traced* t = pyspans::Find(args[0])) pyspans::Leave(*t);
  }
  return None();
}

// _register(code, name, kind) -> 1 when traced. The source keeps `code` alive.
PyObj* Register(PyObj*, PyObj* const* args, ssize_t nargs) {
  const char* name = nargs >= 2 ? g_api.unicode_utf8(args[1]) : nullptr;
  const long kind = IntArg(args, nargs, 2);
  bool ok = false;
  if (name == nullptr) {
    g_api.err_clear();
  } else if (kind >= 1 && kind <= format::kPythonSpanKindMax) {
    ok = pyspans::Register(args[0], name, static_cast<format::PythonSpanKind>(kind));
  }
  return g_api.long_from(ok ? 1 : 0);
}

// _gc(starting, generation): gc.callbacks' "start" and "stop".
PyObj* Gc(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (IntArg(args, nargs, 0) != 0) {
    pyspans::GcStart(static_cast<int>(IntArg(args, nargs, 1)));
  } else {
    pyspans::GcStop();
  }
  return None();
}

PyObj* Warn(PyObj*, PyObj* const* args, ssize_t nargs) {
  const char* text = nargs >= 1 ? g_api.unicode_utf8(args[0]) : nullptr;
  if (text == nullptr) {
    g_api.err_clear();
  } else {
    LogLine("python tracing: %s", text);
  }
  return None();
}

PyObj* CodeOf(PyObj* frame) {
  if (g_api.frame_get_code == nullptr) {
    return *reinterpret_cast<PyObj* const*>(reinterpret_cast<char*>(frame) + kFrameCodeOffset38);
  }
  PyObj* code = g_api.frame_get_code(frame);  // a new reference; the frame keeps its own
  g_api.decref(code);
  return code;
}

int Profile(PyObj* obj, PyObj* frame, int what, PyObj* arg);

// What sys.setprofile's trampoline does for the profiler the thread had before us (`obj`): call
// it with (frame, event name, arg) around the frame's locals; one that raises is removed, as
// CPython removes it, and the error propagates.
int Chain(PyObj* obj, PyObj* frame, int what, PyObj* arg) {
  if (what < 0 || what >= kTraceEvents) return 0;
  if (arg == nullptr) arg = g_api.none;
  if (g_api.fast_to_locals(frame) < 0) return -1;
  PyObj* result = g_api.call(obj, frame, g_what[what], arg, nullptr);
  g_api.locals_to_fast(frame, 1);
  if (result == nullptr) {
    g_api.traceback_here(frame);
    g_api.set_profile(&Profile, nullptr);
    return -1;
  }
  g_api.decref(result);
  return 0;
}

// The profile function's events that are timed for the hook's own time: 1 in 64 of those that
// trace nothing (a traced call's Enter and Leave time themselves), each counting for 64.
constexpr uint32_t kProfileSample = 64;

// The profile function of 3.8-3.11 (PyEval_SetProfile): every event of the thread (calls,
// returns, C calls ...). The previous profiler's time (Chain) is not the hook's.
int Profile(PyObj* obj, PyObj* frame, int what, PyObj* arg) {
  const bool sampled = (++internal::t_profile_events & (kProfileSample - 1)) == 0;
  const int64_t start = sampled ? RealtimeNs() : 0;
  const pyspans::Traced* t = nullptr;
  if (what == kTraceCall || what == kTraceReturn) {
    if ((t = pyspans::Find(CodeOf(frame))) != nullptr) {
      what == kTraceCall ? pyspans::Enter(*t) : pyspans::Leave(*t);
    }
  }
  if (sampled && t == nullptr) budget::ChargeSince(start, kProfileSample);
  return obj == nullptr ? 0 : Chain(obj, frame, what, arg);
}

// _set_profile(previous): this thread's profile function becomes ours, chaining `previous` (a
// Python profile function, or None). sys.getprofile() then still returns `previous`.
PyObj* SetProfile(PyObj*, PyObj* const* args, ssize_t nargs) {
  PyObj* previous = nargs >= 1 && args[0] != g_api.none ? args[0] : nullptr;
  g_api.set_profile(&Profile, previous);
  return None();
}

// The pending call of _on_main: runs the callable on the main thread (errors printed, cleared).
int RunOnMain(void* callable) {
  PyObj* result = g_api.call(static_cast<PyObj*>(callable), nullptr);
  if (result == nullptr) {
    g_api.err_print();
  } else {
    g_api.decref(result);
  }
  g_api.decref(static_cast<PyObj*>(callable));
  return 0;
}

// _on_main(callable): calls it on the main thread, between two bytecodes (Py_AddPendingCall).
PyObj* OnMain(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (nargs >= 1) {
    g_api.incref(args[0]);
    if (g_api.add_pending_call(&RunOnMain, args[0]) != 0) g_api.decref(args[0]);
  }
  return None();
}

MethodDef g_functions[] = {
    {"_start", &Start, kMethFastcall, nullptr},
    {"_stop", &Stop, kMethFastcall, nullptr},
    {"_register", &Register, kMethFastcall, nullptr},
    {"_gc", &Gc, kMethFastcall, nullptr},
    {"_warn", &Warn, kMethFastcall, nullptr},
    {"_set_profile", &SetProfile, kMethFastcall, nullptr},
    {"_on_main", &OnMain, kMethFastcall, nullptr},
};

void SetString(PyObj* dict, const char* key, const char* value) {
  PyObj* s = g_api.unicode_from(value);
  if (s == nullptr) return;
  g_api.dict_set(dict, key, s);
  g_api.decref(s);
}

// The pending call: main thread, GIL held, between two bytecodes.
int RunTracer(void*) {
  for (int i = 0; i < kTraceEvents; ++i) g_what[i] = g_api.unicode_intern(kWhatNames[i]);
  PyObj* dict = g_api.dict_new();
  if (dict == nullptr) return 0;
  g_api.dict_set(dict, "__builtins__", g_api.builtins());
  SetString(dict, "__name__", "xtimer_pytrace");
  SetString(dict, "_specs", g_specs->c_str());
  SetString(dict, "_defaults", kDefaultPythonTraceSpecs);
  SetString(dict, "_explicit", g_explicit ? "1" : "");
  for (MethodDef& def : g_functions) {
    PyObj* f = g_api.cfunction_new(&def, nullptr, nullptr);
    if (f == nullptr) continue;
    g_api.dict_set(dict, def.name, f);
    g_api.decref(f);
  }
  PyObj* result = g_api.run_string(PythonTraceSource(), kFileInput, dict, dict, nullptr);
  if (result == nullptr) {
    g_api.err_print();  // a bug of the source; the application goes on
  } else {
    g_api.decref(result);
  }
  g_api.decref(dict);
  return 0;
}

}  // namespace

bool InstallPythonTracing(const std::string& specs, bool is_explicit, std::string* error) {
  if (FindPythonSymbol("Py_IsInitialized") == nullptr) return true;  // no CPython here
  Api api;
  if (!ResolveApi(&api)) {
    *error = "a CPython function the tracer calls is missing";
    return false;
  }
  if (api.is_initialized() == 0 || g_installed.exchange(true)) return true;
  g_api = api;
  g_specs = new std::string(specs);
  g_explicit = is_explicit;
  if (api.add_pending_call(&RunTracer, nullptr) != 0) {
    *error = "Py_AddPendingCall refused the tracer's installation";
    return false;
  }
  return true;
}

}  // namespace hook
}  // namespace xtimer

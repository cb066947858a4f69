#include "stacktrace/frame_owner.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "stacktrace/cxx_name.h"

namespace xtimer {
namespace stacktrace {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool StartsWithAny(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes) {
    if (StartsWith(s, p)) return true;
  }
  return false;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// libc.so.6 and libc-2.31.so, not libcuda: a library name is the prefix followed by '.' or '-'.
bool IsLibrary(const std::string& base, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (!StartsWith(base, n)) continue;
    const size_t len = std::char_traits<char>::length(n);
    const char next = base.size() > len ? base[len] : '\0';
    if (next == '.' || next == '-' || next == '\0') return true;
  }
  return false;
}

bool IsSystemModule(const std::string& base) {
  // ld-linux-x86-64.so.2, ld-2.31.so, ld64.so.2; the vdso as /proc/PID/maps names it.
  return IsLibrary(base, {"libc", "libpthread", "libm", "libdl", "librt", "libresolv", "libutil",
                          "libstdc++", "libgcc_s", "libatomic", "libgomp", "libunwind", "ld",
                          "ld64"}) ||
         StartsWithAny(base, {"linux-vdso", "[vdso]"});
}

bool IsInterpreterModule(const std::string& path, const std::string& base) {
  // The executable: python, python3, python3.11, python3.12d...
  const bool executable =
      StartsWith(base, "python") && std::all_of(base.begin() + 6, base.end(), [](char c) {
        return isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'd';
      });
  return executable || StartsWith(base, "libpython") || IsLibrary(base, {"libffi"}) ||
         path.find("/lib-dynload/") != std::string::npos;
}

bool IsCudaModule(const std::string& base) {
  return StartsWithAny(base, {"libcuda", "libcublas", "libnccl", "libcudnn", "libcufft",
                              "libcurand", "libcusparse", "libcusolver", "libcupti", "libnvrtc",
                              "libnvJitLink", "libnvToolsExt", "libnvidia-"});
}

bool IsCudaFunction(const std::string& f) {
  // NCCL (ncclX and its pncclX aliases), the runtime (cudaX), cuBLAS(Lt), the driver (cuX).
  return StartsWithAny(f, {"nccl", "pnccl", "cuda", "cublas"}) ||
         (f.size() > 2 && f[0] == 'c' && f[1] == 'u' && isupper(static_cast<unsigned char>(f[2])));
}

// Python's standard library: a file under .../lib/pythonX.Y/ outside site- and dist-packages,
// and the frozen modules (<frozen importlib._bootstrap>).
bool IsPythonStdlib(const std::string& file) {
  if (StartsWith(file, "<frozen ")) return true;
  if (file.find("/site-packages/") != std::string::npos ||
      file.find("/dist-packages/") != std::string::npos) {
    return false;
  }
  for (size_t at = file.find("/lib/python"); at != std::string::npos;
       at = file.find("/lib/python", at + 1)) {
    const size_t v = at + 11;
    if (v < file.size() && isdigit(static_cast<unsigned char>(file[v]))) return true;
  }
  return false;
}

// The runtimes' code that is linked or compiled into the caller's module: the C++ standard
// library's templates and inline functions (std::this_thread::sleep_for<...>,
// std::condition_variable::wait<...>) and the C runtime's entry point.
bool IsRuntimeName(const std::string& name) {
  return StartsWithAny(name, {"std::", "__gnu_cxx::", "__cxxabiv1::"}) || name == "_start";
}

Owner NativeOwner(const Frame& f) {
  // A demangled C++ name is read past its return type; a C name has no parameter list.
  const std::string name =
      f.function.find('(') == std::string::npos ? f.function : ShortFunctionName(f.function);
  if (StartsWith(name, "xtimer::")) return Owner::kXtimer;
  if (StartsWith(name, "_Py") || StartsWith(name, "Py")) return Owner::kInterpreter;
  if (f.module.empty()) {
    if (name.empty()) return Owner::kUnknown;
    if (IsCudaFunction(name)) return Owner::kCuda;
  } else {
    const std::string base = BaseName(f.module);
    if (StartsWith(base, "libxtimer")) return Owner::kXtimer;
    if (IsSystemModule(base)) return Owner::kSystem;
    if (IsInterpreterModule(f.module, base)) return Owner::kInterpreter;
    if (IsCudaModule(base)) return Owner::kCuda;
  }
  return IsRuntimeName(name) ? Owner::kSystem : Owner::kApplication;
}

}  // namespace

Owner OwnerOf(const Frame& f) {
  switch (f.kind) {
    case Frame::kPython:
      return IsPythonStdlib(f.module) ? Owner::kSystem : Owner::kApplication;
    case Frame::kNative: return NativeOwner(f);
    default: return Owner::kUnknown;
  }
}

const char* OwnerName(Owner owner) {
  static const char* const kNames[] = {"application", "system", "interpreter",
                                       "cuda",        "xtimer", "unknown"};
  return kNames[static_cast<int>(owner)];
}

bool IsXtimerThreadName(const std::string& name) { return StartsWith(name, "xtimer-"); }

void FoldXtimer(StacksFile* file) {
  // Each table entry judged once, on first use (owner + 1; 0: not yet).
  std::vector<uint8_t> judged(file->frames.size(), 0);
  auto owner = [&](uint32_t f) {
    if (judged[f] == 0) judged[f] = static_cast<uint8_t>(OwnerOf(file->frames[f])) + 1;
    return static_cast<Owner>(judged[f] - 1);
  };
  // A thread is xtimer's when xtimer's code started it: its outermost frame that is not the
  // system's (clone, start_thread, the std::thread trampoline) is xtimer's. A thread of the
  // application's or of a library (NCCL's proxy) that calls through the hook is not.
  auto xtimers = [&](const Thread& t) {
    if (IsXtimerThreadName(t.name)) return true;
    for (auto f = t.frames.rbegin(); f != t.frames.rend(); ++f) {
      const Owner o = owner(*f);
      if (o != Owner::kSystem && o != Owner::kUnknown) return o == Owner::kXtimer;
    }
    return false;
  };
  size_t kept = 0;
  for (Thread& t : file->threads) {
    if (xtimers(t)) continue;
    t.frames.erase(std::remove_if(t.frames.begin(), t.frames.end(),
                                  [&](uint32_t f) { return owner(f) == Owner::kXtimer; }),
                   t.frames.end());
    if (&file->threads[kept] != &t) file->threads[kept] = std::move(t);
    ++kept;
  }
  file->threads.resize(kept);
}

}  // namespace stacktrace
}  // namespace xtimer

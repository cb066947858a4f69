#include "stacktrace/frame_owner.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "stacktrace/cxx_name.h"

namespace xtimer {
namespace stacktrace {
namespace {

// Views, not copies: the judge runs on every frame of every file `xtimer stacks` reads.
bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool StartsWithAny(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (StartsWith(s, p)) return true;
  }
  return false;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// libc.so.6 and libc-2.31.so, not libcuda: a library name is the prefix followed by '.' or '-'.
bool IsLibrary(std::string_view base, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (!StartsWith(base, n)) continue;
    const char next = base.size() > n.size() ? base[n.size()] : '\0';
    if (next == '.' || next == '-' || next == '\0') return true;
  }
  return false;
}

bool IsSystemModule(std::string_view base) {
  // ld-linux-x86-64.so.2, ld-2.31.so, ld64.so.2; the vdso as /proc/PID/maps names it.
  return IsLibrary(base, {"libc", "libpthread", "libm", "libdl", "librt", "libresolv", "libutil",
                          "libstdc++", "libgcc_s", "libatomic", "libgomp", "libunwind", "ld",
                          "ld64"}) ||
         StartsWithAny(base, {"linux-vdso", "[vdso]"});
}

bool IsInterpreterModule(std::string_view path, std::string_view base) {
  // The executable: python, python3, python3.11, python3.12d...
  const bool executable =
      StartsWith(base, "python") && std::all_of(base.begin() + 6, base.end(), [](char c) {
        return isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'd';
      });
  return executable || StartsWith(base, "libpython") || IsLibrary(base, {"libffi"}) ||
         path.find("/lib-dynload/") != std::string_view::npos;
}

bool IsCudaModule(std::string_view base) {
  return StartsWithAny(base, {"libcuda", "libcublas", "libnccl", "libcudnn", "libcufft",
                              "libcurand", "libcusparse", "libcusolver", "libcupti", "libnvrtc",
                              "libnvJitLink", "libnvToolsExt", "libnvidia-"});
}

bool IsCudaFunction(std::string_view f) {
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
bool IsRuntimeName(std::string_view name) {
  return StartsWithAny(name, {"std::", "__gnu_cxx::", "__cxxabiv1::"}) || name == "_start";
}

Owner NativeOwner(const Frame& f) {
  // A demangled C++ name is read past its return type (only when a name it looks for is in it).
  std::string parsed;
  std::string_view name = f.function;
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("(") && (has("xtimer::") || has("std::") || has("__gnu_cxx::") || has("__cxxabiv1::"))) {
    parsed = ShortFunctionName(f.function);
    name = parsed;
  }
  if (StartsWith(name, "xtimer::")) return Owner::kXtimer;
  if (StartsWith(name, "_Py") || StartsWith(name, "Py")) return Owner::kInterpreter;
  if (f.module.empty()) {
    if (name.empty()) return Owner::kUnknown;
    if (IsCudaFunction(name)) return Owner::kCuda;
  } else {
    const std::string_view base = BaseName(f.module);
    if (StartsWith(base, "libxtimer")) return Owner::kXtimer;
    if (IsSystemModule(base)) return Owner::kSystem;
    if (IsInterpreterModule(f.module, base)) return Owner::kInterpreter;
    if (IsCudaModule(base)) return Owner::kCuda;
  }
  return IsRuntimeName(name) ? Owner::kSystem : Owner::kApplication;
}

// False when no frame or thread of the file can be xtimer's (every xtimer frame has "xtimer" in
// its function or module): such a file, the usual one without the hook, is left as it is at the
// cost of one substring search per frame.
bool MayHoldXtimer(const StacksFile& file) {
  for (const Frame& f : file.frames) {
    if (f.function.find("xtimer") != std::string::npos ||
        f.module.find("xtimer") != std::string::npos) {
      return true;
    }
  }
  for (const Thread& t : file.threads) {
    if (IsXtimerThreadName(t.name)) return true;
  }
  return false;
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
  if (!MayHoldXtimer(*file)) return;
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

#include "hook/resolve.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace xtimer {
namespace hook {
namespace {

constexpr int kLibraries = static_cast<int>(Library::kCount);
constexpr const char* kStems[kLibraries] = {"libcudart", "libcublas", "libcublasLt", "libnccl",
                                            "libcuda"};

// What is known about one vendor library: its handle once found, else the loader generation of
// the last search that found nothing.
struct LibraryState {
  std::atomic<void*> handle{nullptr};
  std::atomic<unsigned long long> missed_generation{~0ULL};
};
LibraryState g_libraries[kLibraries];

bool StartsWith(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

// The real dlsym, read by dlsym_trampoline.S without a lock; written once (every writer stores
// the same value). Sanitizer runtimes preloaded before us resolve their interceptors with
// dlsym(RTLD_NEXT) before they are initialized, and their calls land in our trampoline: the
// resolution below is not instrumented and calls nothing that is.
extern "C" {
__attribute__((visibility("hidden"))) void* xtimer_real_dlsym = nullptr;

__attribute__((visibility("hidden"), no_sanitize_address, no_sanitize("thread", "undefined")))
void* xtimer_resolve_real_dlsym() {
  void* p = __atomic_load_n(&xtimer_real_dlsym, __ATOMIC_ACQUIRE);
  if (p != nullptr) return p;
  int saved_errno = errno;
  // glibc 2.34 moved dlsym into libc (GLIBC_2.34); older ones have only the first version.
  static const char* const kVersions[3] = {"GLIBC_2.34", "GLIBC_2.17", "GLIBC_2.2.5"};
  for (int i = 0; i < 3 && p == nullptr; ++i) p = dlvsym(RTLD_NEXT, "dlsym", kVersions[i]);
  dlerror();  // ours: leave no message for the application's next dlerror()
  errno = saved_errno;
  __atomic_store_n(&xtimer_real_dlsym, p, __ATOMIC_RELEASE);
  return p;
}
}  // extern "C"

namespace xtimer {
namespace hook {

void* RealDlsym(void* handle, const char* name) {
  auto real = reinterpret_cast<void* (*)(void*, const char*)>(xtimer_resolve_real_dlsym());
  return real != nullptr ? real(handle, name) : nullptr;
}

unsigned long long LoaderGeneration() {
  unsigned long long generation = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          *static_cast<unsigned long long*>(data) = info->dlpi_adds + info->dlpi_subs;
        }
        return 1;  // the counters are the same in every entry: one is enough
      },
      &generation);
  return generation;
}

namespace {

// The paths of the loaded objects that are `lib`, in load order.
std::vector<std::string> LoadedFilesOf(Library lib) {
  struct Search {
    Library lib;
    std::vector<std::string> paths;
  } search{lib, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && IsLibraryFile(s->lib, info->dlpi_name)) {
          s->paths.emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &search);
  return search.paths;
}

// A handle of the loaded `lib` (the first in load order), kept for the life of the process; null
// when none is loaded.
void* FindLibrary(Library lib) {
  LibraryState& state = g_libraries[static_cast<int>(lib)];
  for (const std::string& path : LoadedFilesOf(lib)) {
    void* h = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (h == nullptr) {
      dlerror();
      continue;
    }
    void* expected = nullptr;
    if (state.handle.compare_exchange_strong(expected, h, std::memory_order_acq_rel)) return h;
    dlclose(h);  // another thread found it first
    return expected;
  }
  return nullptr;
}

}  // namespace

Library LibraryOf(const char* symbol) {
  if (StartsWith(symbol, "cublasLt")) return Library::kCublasLt;
  if (StartsWith(symbol, "cublas")) return Library::kCublas;
  if (StartsWith(symbol, "nccl") || StartsWith(symbol, "pnccl")) return Library::kNccl;
  if (StartsWith(symbol, "cu") && !StartsWith(symbol, "cuda")) return Library::kCuda;
  return Library::kCudart;
}

const char* LibraryStem(Library lib) { return kStems[static_cast<int>(lib)]; }

bool IsLibraryFile(Library lib, const char* path) {
  const char* slash = strrchr(path, '/');
  const char* file = slash != nullptr ? slash + 1 : path;
  const char* stem = LibraryStem(lib);
  size_t n = strlen(stem);
  return strncmp(file, stem, n) == 0 && (file[n] == '.' || file[n] == '-');
}

void* ResolveReal(const char* symbol) {
  int saved_errno = errno;
  void* p = RealDlsym(RTLD_NEXT, symbol);
  if (p == nullptr) {
    dlerror();  // ours: leave no message for the application's next dlerror()
    LibraryState& state = g_libraries[static_cast<int>(LibraryOf(symbol))];
    void* h = state.handle.load(std::memory_order_acquire);
    if (h == nullptr) {
      unsigned long long generation = LoaderGeneration();
      if (state.missed_generation.load(std::memory_order_relaxed) != generation) {
        h = FindLibrary(LibraryOf(symbol));
        if (h == nullptr) state.missed_generation.store(generation, std::memory_order_relaxed);
      }
    }
    if (h != nullptr) {
      p = RealDlsym(h, symbol);
      if (p == nullptr) dlerror();
    }
  }
  errno = saved_errno;
  return p;
}

}  // namespace hook
}  // namespace xtimer

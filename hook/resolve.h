// Finding the real definition of a vendor function, wherever its library was loaded.
//
// A program may reach CUDA through the global scope (linked at build time, LD_PRELOAD, dlopen
// with RTLD_GLOBAL) or through a local scope: Python's ctypes and extension modules dlopen with
// RTLD_LOCAL, so libcudart, libcublas, libcublasLt and libnccl may sit in the private dependency
// group of one module, invisible to dlsym(RTLD_NEXT), and may arrive late (cuBLAS at the first
// matmul, NCCL at the first communicator). The application's own references still bind to our
// exported shims (the preloaded library comes first in every lookup scope); the shims then need
// the real function, which this unit finds:
//
//   1. dlsym(RTLD_NEXT, name): the global scope after libxtimer.so (and any interposer after us);
//   2. else the vendor library itself, found among every loaded object by its file name
//      (`libcudart.so.13`, `libcudart-1a2b3c4d.so.12` as auditwheel renames it, ...), opened with
//      RTLD_NOLOAD (which neither loads nor moves anything between scopes) and asked with
//      dlsym(handle, name).
//
// The library handle is found once and kept (so the library is never unloaded under a cached
// pointer). A miss is retried only after the process has loaded or unloaded an object since the
// last try (glibc's dl_iterate_phdr counters), so a function whose library is absent costs little.
// No lock is taken: concurrent resolutions find the same answer and publish it atomically, and
// no lock of ours is ever held across a loader call (a library constructor running under the
// loader's lock may call a shim). Everything here is a cold path; errno and dlerror() are left
// as the caller had them.
#ifndef XTIMER_HOOK_RESOLVE_H_
#define XTIMER_HOOK_RESOLVE_H_

namespace xtimer {
namespace hook {

enum class Library : int {
  kCudart = 0,
  kCublas = 1,
  kCublasLt = 2,
  kNccl = 3,
  kCuda = 4,  // the driver, libcuda.so.1
  kCount = 5
};

// The library that defines a hooked or used function, from its name: cublasLt* → cuBLASLt,
// cublas* → cuBLAS, nccl* / pnccl* → NCCL, cuda* and __cuda* → the runtime, other cu* → the
// driver.
Library LibraryOf(const char* symbol);

// The file-name stem of a library ("libcudart", ...).
const char* LibraryStem(Library lib);

// Whether `path`'s file name is `lib`'s: its stem followed by '.' or '-' (libcublas.so.13 is
// cuBLAS, libcublasLt.so.13 is not).
bool IsLibraryFile(Library lib, const char* path);

// Changes whenever the process loads or unloads an object (dlopen, dlclose): a search that found
// nothing is worth repeating only when it has changed.
unsigned long long LoaderGeneration();

// The real `symbol`, or null when no loaded object defines it (yet).
void* ResolveReal(const char* symbol);

// The real dlsym (glibc's, or the next interposer's), never libxtimer.so's own (which may hand
// out shims: dlsym_trampoline.S): every lookup of the hook's goes through it. RTLD_NEXT is then
// relative to libxtimer.so.
void* RealDlsym(void* handle, const char* name);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_RESOLVE_H_

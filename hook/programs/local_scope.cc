// Loads CUDA the way Python does (ctypes.CDLL, extension modules): dlopen(RTLD_LOCAL) of modules
// whose DT_NEEDED libraries (libcudart, libnccl, later libcublas) then live in a local scope,
// invisible to dlsym(RTLD_NEXT). Links no CUDA library itself.
// Usage: local_scope COMM_MODULE GEMM_MODULE   prints "checksum=N" and "OK"
#include <dlfcn.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>

namespace {

void* Load(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
  return h;
}

template <typename Fn>
Fn Symbol(void* module, const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(module, name));
  if (fn == nullptr) fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
  return fn;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: local_scope COMM_MODULE GEMM_MODULE\n");
    return 2;
  }
  void* comm_module = Load(argv[1]);
  if (comm_module == nullptr) return 1;
  auto steps = Symbol<uint64_t (*)(int, int)>(comm_module, "xt_local_comm_steps");
  if (steps == nullptr) return 1;
  uint64_t checksum = steps(2, 3);  // three steps before cuBLAS is loaded
  void* gemm_module = Load(argv[2]);
  if (gemm_module == nullptr) return 1;
  auto gemms = Symbol<int (*)(int, int)>(gemm_module, "xt_local_gemms");
  if (gemms == nullptr || gemms(256, 4) != 0) return 1;
  checksum = checksum * 31 + steps(2, 2);
  printf("checksum=%" PRIu64 "\nOK\n", checksum);
  return 0;
}

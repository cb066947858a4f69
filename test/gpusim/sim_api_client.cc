#include "test/gpusim/sim_api_client.h"

#include <dlfcn.h>

#include "test/gpusim/common/sim_env.h"

extern "C" const XtsimApi* xtsim_get_api(uint32_t version) __attribute__((weak));

namespace xtsim {

const XtsimApi& Runtime() {
  static const XtsimApi* api = [] {
    using GetApi = const XtsimApi* (*)(uint32_t);
    GetApi get = xtsim_get_api;
    if (get == nullptr) {
      // Not linked against the simulated driver: find it among the loaded objects, or load it
      // (as the real cuBLAS and NCCL load libcuda.so.1), leaving the scopes as they are.
      get = reinterpret_cast<GetApi>(dlsym(RTLD_DEFAULT, "xtsim_get_api"));
      if (get == nullptr) {
        void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) get = reinterpret_cast<GetApi>(dlsym(handle, "xtsim_get_api"));
      }
    }
    if (get == nullptr) {
      Fatal("the simulated libcuda.so.1 is not loaded (is LD_LIBRARY_PATH pointing at gpusim?)");
    }
    const XtsimApi* table = get(XTSIM_API_VERSION);
    if (table == nullptr) Fatal("the simulated libcuda.so.1 does not speak API version %u",
                                XTSIM_API_VERSION);
    return table;
  }();
  return *api;
}

}  // namespace xtsim

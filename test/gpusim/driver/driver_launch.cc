// Driver API entry points of the simulated libcuda.so.1 that put work on streams or find it:
// modules and functions (cuModuleLoadData, cuModuleGetFunction, cuFuncGetName), launches
// (cuLaunchKernel[Ex]), copies (cuMemcpy*), sets (cuMemsetD*), error names and
// cuGetProcAddress. Behaviour follows the CUDA Driver API reference (the documentation comments
// of /usr/local/cuda/include/cuda.h, named per function below).
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/capture_rules.h"
#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/kernels.h"
#include "test/gpusim/cudart/stream_ops.h"
#include "test/gpusim/driver/driver_state.h"
#include "test/gpusim/driver/module_image.h"
#include "test/gpusim/driver/proc_table.h"

using xtsim::Stream;
using xtsim::driver::FromRuntime;
using xtsim::driver::ResolveStream;

namespace {

// cuLaunchKernel: block and grid limits of the device (compute capability 9.0), and
// "kernelParams and extra ... it is an error to specify both" (CUDA_ERROR_INVALID_VALUE).
CUresult ValidateLaunch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared_mem, void** params, void** extra) {
  unsigned long long threads = static_cast<unsigned long long>(bx) * by * bz;
  if (threads == 0 || threads > 1024 || bx > 1024 || by > 1024 || bz > 64) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (gx == 0 || gy == 0 || gz == 0 || gx > 2147483647u || gy > 65535 || gz > 65535) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (shared_mem > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult LaunchImpl(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned shared_mem, CUstream stream, void** params, void** extra,
                    bool per_thread) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r != CUDA_SUCCESS) return r;
  const xtsim::KernelInfo* k = xtsim::driver::FindFunction(f);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  r = ValidateLaunch(gx, gy, gz, bx, by, bz, shared_mem, params, extra);
  if (r != CUDA_SUCCESS) return r;
  return FromRuntime(xtsim::SubmitKernel(s, *k));
}

CUresult LaunchExImpl(const CUlaunchConfig* c, CUfunction f, void** params, void** extra,
                      bool per_thread) {
  if (c == nullptr || (c->numAttrs != 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return LaunchImpl(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                    c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra, per_thread);
}

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// Copies: the asynchronous ones on `stream`; the synchronous ones on the default stream, and
// they return once the copy is done ("synchronous" behaviour of the memcpy API).
CUresult CopyImpl(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, CUstream stream,
                  bool per_thread, bool sync) {
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r == CUDA_SUCCESS && sync) r = FromRuntime(xtsim::CheckUnsafeCall());
  if (r != CUDA_SUCCESS) return r;
  r = FromRuntime(xtsim::SubmitCopy(s, dst, src, bytes, kind));
  if (r == CUDA_SUCCESS && sync) s->Synchronize();
  return r;
}

// cuMemsetD8/16/32[Async]: N elements of 1, 2 or 4 bytes; dstDevice must be aligned to the
// element size.
CUresult SetImpl(CUdeviceptr dst, uint32_t value, size_t element_size, size_t n, CUstream stream,
                 bool per_thread, bool sync) {
  if (dst % element_size != 0) return CUDA_ERROR_INVALID_VALUE;
  Stream* s;
  CUresult r = ResolveStream(stream, per_thread, &s);
  if (r == CUDA_SUCCESS && sync) r = FromRuntime(xtsim::CheckUnsafeCall());
  if (r != CUDA_SUCCESS) return r;
  r = FromRuntime(xtsim::SubmitFill(s, Ptr(dst), value, element_size, n));
  if (r == CUDA_SUCCESS && sync) s->Synchronize();
  return r;
}

// The names and strings of the errors a caller of this subset can see (cuGetErrorName,
// cuGetErrorString: CUDA_ERROR_INVALID_VALUE for an unknown code).
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult ErrorLookup(CUresult error, const char** out, bool name) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorText& e : kErrors) {
    if (e.code == error) {
      *out = name ? e.name : e.text;
      return CUDA_SUCCESS;
    }
  }
  *out = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ modules and functions

// cuModuleLoadData: a cubin or PTX image (a fat binary is not modelled: it fails loudly);
// CUDA_ERROR_INVALID_IMAGE for anything else. Loads into the current context.
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx;
  CUresult r = xtsim::driver::Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  std::vector<std::string> names;
  bool ok = false;
  switch (xtsim::driver::KindOf(image)) {
    case xtsim::driver::ImageKind::kCubin:
      ok = xtsim::driver::CubinKernels(image, 0, &names);
      break;
    case xtsim::driver::ImageKind::kPtx:
      ok = xtsim::driver::PtxKernels(static_cast<const char*>(image), &names);
      break;
    case xtsim::driver::ImageKind::kFatbin:
      xtsim::NotImplemented("cuModuleLoadData (fat binary images)");
      return CUDA_ERROR_NOT_SUPPORTED;
    case xtsim::driver::ImageKind::kInvalid:
      break;
  }
  if (!ok) return CUDA_ERROR_INVALID_IMAGE;
  auto* m = new CUmod_st();
  for (const std::string& n : names) m->functions.push_back(xtsim::RegisterModuleKernel(n.c_str()));
  xtsim::driver::AddModule(m);
  *module = m;
  return CUDA_SUCCESS;
}

// cuModuleLoadDataEx: JIT options only tune compilation, which the simulator does not do.
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*,
                            void**) {
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(CUmodule module) {
  CUresult r = xtsim::driver::CheckInit();
  if (r != CUDA_SUCCESS) return r;
  if (!xtsim::driver::RemoveModule(module)) return CUDA_ERROR_INVALID_HANDLE;
  delete module;
  return CUDA_SUCCESS;
}

// cuModuleGetFunction: CUDA_ERROR_NOT_FOUND when the module has no kernel of that name.
CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule module, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = xtsim::driver::CheckInit();
  if (r != CUDA_SUCCESS) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  for (const xtsim::KernelInfo* k : module->functions) {
    if (k->mangled == name) {
      *hfunc = reinterpret_cast<CUfunction>(const_cast<xtsim::KernelInfo*>(k));
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

// cuFuncGetName: the function's (mangled) name, valid while its module is loaded.
CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = xtsim::driver::CheckInit();
  if (r != CUDA_SUCCESS) return r;
  const xtsim::KernelInfo* k = xtsim::driver::FindFunction(hfunc);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = k->mangled.c_str();
  return CUDA_SUCCESS;
}

// cuFuncGetAttribute: the attributes launchers read before a launch (Triton reads registers,
// spills and the static shared memory); device code does not exist here, so they are zero.
CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = xtsim::driver::CheckInit();
  if (r != CUDA_SUCCESS) return r;
  if (xtsim::driver::FindFunction(hfunc) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute, int) {
  CUresult r = xtsim::driver::CheckInit();
  if (r != CUDA_SUCCESS) return r;
  return xtsim::driver::FindFunction(hfunc) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// ------------------------------------------------------------------------------ errors

CUresult cuGetErrorName(CUresult error, const char** str) { return ErrorLookup(error, str, true); }
CUresult cuGetErrorString(CUresult error, const char** str) {
  return ErrorLookup(error, str, false);
}

// cuGetProcAddress (CUDA 12.5+ signature): the driver function `symbol` names, in its per-thread
// default stream variant when flags ask for it; CUDA_ERROR_NOT_FOUND with symbolStatus
// CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND when there is none. The addresses are the library's own
// definitions (never an interposer's), as the real driver hands out its internal entry points.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~static_cast<cuuint64_t>(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = xtsim::driver::LookupProc(symbol, cudaVersion, per_thread);
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"

// ------------------------------------------------------------------------------ launches

XTSIM_CU_STREAM_API(cuLaunchKernel, cuLaunchKernel_ptsz,
                    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra),
                    LaunchImpl(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra, false),
                    LaunchImpl(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra, true))
XTSIM_CU_STREAM_API(cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
                    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
                    LaunchExImpl(config, f, params, extra, false),
                    LaunchExImpl(config, f, params, extra, true))

// ------------------------------------------------------------------------- copies and sets

XTSIM_CU_STREAM_API(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2_ptsz,
                    (CUdeviceptr dst, const void* src, size_t n, CUstream s),
                    CopyImpl(Ptr(dst), src, n, cudaMemcpyHostToDevice, s, false, false),
                    CopyImpl(Ptr(dst), src, n, cudaMemcpyHostToDevice, s, true, false))
XTSIM_CU_STREAM_API(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2_ptsz,
                    (void* dst, CUdeviceptr src, size_t n, CUstream s),
                    CopyImpl(dst, Ptr(src), n, cudaMemcpyDeviceToHost, s, false, false),
                    CopyImpl(dst, Ptr(src), n, cudaMemcpyDeviceToHost, s, true, false))
XTSIM_CU_STREAM_API(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2_ptsz,
                    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
                    CopyImpl(Ptr(dst), Ptr(src), n, cudaMemcpyDeviceToDevice, s, false, false),
                    CopyImpl(Ptr(dst), Ptr(src), n, cudaMemcpyDeviceToDevice, s, true, false))
XTSIM_CU_STREAM_API(cuMemcpyAsync, cuMemcpyAsync_ptsz,
                    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
                    CopyImpl(Ptr(dst), Ptr(src), n, cudaMemcpyDefault, s, false, false),
                    CopyImpl(Ptr(dst), Ptr(src), n, cudaMemcpyDefault, s, true, false))
XTSIM_CU_STREAM_API(cuMemcpyHtoD, cuMemcpyHtoD_v2_ptds,
                    (CUdeviceptr dst, const void* src, size_t n),
                    CopyImpl(Ptr(dst), src, n, cudaMemcpyHostToDevice, nullptr, false, true),
                    CopyImpl(Ptr(dst), src, n, cudaMemcpyHostToDevice, nullptr, true, true))
XTSIM_CU_STREAM_API(cuMemcpyDtoH, cuMemcpyDtoH_v2_ptds, (void* dst, CUdeviceptr src, size_t n),
                    CopyImpl(dst, Ptr(src), n, cudaMemcpyDeviceToHost, nullptr, false, true),
                    CopyImpl(dst, Ptr(src), n, cudaMemcpyDeviceToHost, nullptr, true, true))
XTSIM_CU_STREAM_API(cuMemsetD8Async, cuMemsetD8Async_ptsz,
                    (CUdeviceptr dst, unsigned char v, size_t n, CUstream s),
                    SetImpl(dst, v, 1, n, s, false, false), SetImpl(dst, v, 1, n, s, true, false))
XTSIM_CU_STREAM_API(cuMemsetD16Async, cuMemsetD16Async_ptsz,
                    (CUdeviceptr dst, unsigned short v, size_t n, CUstream s),
                    SetImpl(dst, v, 2, n, s, false, false), SetImpl(dst, v, 2, n, s, true, false))
XTSIM_CU_STREAM_API(cuMemsetD32Async, cuMemsetD32Async_ptsz,
                    (CUdeviceptr dst, unsigned int v, size_t n, CUstream s),
                    SetImpl(dst, v, 4, n, s, false, false), SetImpl(dst, v, 4, n, s, true, false))
XTSIM_CU_STREAM_API(cuMemsetD8, cuMemsetD8_v2_ptds, (CUdeviceptr dst, unsigned char v, size_t n),
                    SetImpl(dst, v, 1, n, nullptr, false, true),
                    SetImpl(dst, v, 1, n, nullptr, true, true))
XTSIM_CU_STREAM_API(cuMemsetD32, cuMemsetD32_v2_ptds, (CUdeviceptr dst, unsigned int v, size_t n),
                    SetImpl(dst, v, 4, n, nullptr, false, true),
                    SetImpl(dst, v, 4, n, nullptr, true, true))

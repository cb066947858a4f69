#include "test/gpusim/driver/driver_state.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_set>

namespace xtsim {
namespace driver {
namespace {

std::atomic<bool> g_initialized{false};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<CUctx_st>> primary;
  std::unordered_set<CUctx_st*> created;
  std::unordered_set<CUmod_st*> modules;
  std::unordered_set<const KernelInfo*> functions;
};

Registry& Reg() {
  static Registry* r = new Registry();  // never destroyed: handles may be used during exit
  return *r;
}

}  // namespace

CUresult FromRuntime(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidValue: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInitializationError: return CUDA_ERROR_NOT_INITIALIZED;
    case cudaErrorNoDevice: return CUDA_ERROR_NO_DEVICE;
    case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorNotReady: return CUDA_ERROR_NOT_READY;
    case cudaErrorNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
    case cudaErrorStreamCaptureUnsupported: return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case cudaErrorStreamCaptureInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case cudaErrorStreamCaptureUnmatched: return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    case cudaErrorStreamCaptureWrongThread: return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    case cudaErrorStreamCaptureImplicit: return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    case cudaErrorIllegalState: return CUDA_ERROR_ILLEGAL_STATE;
    default: return CUDA_ERROR_UNKNOWN;
  }
}

CUresult CheckInit() {
  if (!g_initialized.load(std::memory_order_acquire) || Engine::InForkedChild()) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  return CUDA_SUCCESS;
}

void MarkInitialized() { g_initialized.store(true, std::memory_order_release); }

CUctx_st* PrimaryContext(int device) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.primary.empty()) {
    for (int i = 0; i < Engine::Get().device_count(); ++i) {
      r.primary.push_back(std::make_unique<CUctx_st>());
      r.primary.back()->device = i;
      r.primary.back()->primary = true;
    }
  }
  return r.primary[static_cast<size_t>(device)].get();
}

bool ValidContext(CUctx_st* ctx) {
  if (ctx == nullptr) return false;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.created.count(ctx) != 0) return true;
  return std::any_of(r.primary.begin(), r.primary.end(),
                     [ctx](const std::unique_ptr<CUctx_st>& p) { return p.get() == ctx; });
}

CUctx_st* NewContext(int device, unsigned flags) {
  auto* ctx = new CUctx_st();
  ctx->device = device;
  ctx->flags = flags;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.created.insert(ctx);
  return ctx;
}

bool DestroyContext(CUctx_st* ctx) {
  Registry& r = Reg();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.created.erase(ctx) == 0) return false;
  }
  delete ctx;
  return true;
}

std::vector<CUctx_st*>& ContextStack() {
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

void SyncCurrentDevice() {
  const std::vector<CUctx_st*>& stack = ContextStack();
  if (!stack.empty()) SetCurrentDevice(stack.back()->device);
}

CUresult Current(CUctx_st** ctx) {
  CUresult r = CheckInit();
  if (r != CUDA_SUCCESS) return r;
  const std::vector<CUctx_st*>& stack = ContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = stack.back();
  return CUDA_SUCCESS;
}

CUresult ResolveStream(CUstream stream, bool per_thread, Stream** out) {
  CUctx_st* ctx;
  CUresult r = Current(&ctx);
  if (r != CUDA_SUCCESS) return r;
  SetCurrentDevice(ctx->device);  // the legacy and per-thread streams are the context's
  *out = Engine::Get().Resolve(reinterpret_cast<cudaStream_t>(stream), per_thread);
  return *out == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

const KernelInfo* FindFunction(CUfunction f) {
  const auto* k = reinterpret_cast<const KernelInfo*>(f);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.functions.count(k) != 0 ? k : nullptr;
}

void AddModule(CUmod_st* module) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.modules.insert(module);
  for (const KernelInfo* k : module->functions) r.functions.insert(k);
}

bool RemoveModule(CUmod_st* module) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.modules.erase(module) == 0) return false;
  for (const KernelInfo* k : module->functions) r.functions.erase(k);
  return true;
}

}  // namespace driver
}  // namespace xtsim

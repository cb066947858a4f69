#include "hook/cuda_api.h"

#include <mutex>

#include "hook/driver_runtime.h"
#include "hook/log.h"
#include "hook/resolve.h"

namespace xtimer {
namespace hook {

CudaApi g_api;
std::atomic<bool> g_cudart_ready{false};

namespace {

std::atomic<unsigned long long> g_cudart_missed_generation{~0ULL};
std::mutex g_publish_mu;  // never held across a loader call

template <typename Fn>
bool Find(const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(ResolveReal(name));
  return *out != nullptr;
}

}  // namespace

CaptureModeScope::CaptureModeScope(cudaStreamCaptureMode mode) : previous_(mode) {
  set_ = g_api.exchange_capture_mode(&previous_) == cudaSuccess;
  if (!set_) g_api.get_last_error();  // only an invalid mode fails: leave no error behind
}

CaptureModeScope::~CaptureModeScope() {
  if (set_ && g_api.exchange_capture_mode(&previous_) != cudaSuccess) g_api.get_last_error();
}

void WarnUnresolved(const char* name, std::atomic<bool>* warned) {
  if (warned->exchange(true)) return;
  LogLine("no loaded library defines %s (searched the global scope and every loaded %s*); the "
          "call fails",
          name, LibraryStem(LibraryOf(name)));
}

bool ResolveCudart() {
  if (g_cudart_ready.load(std::memory_order_acquire)) return true;
  unsigned long long generation = LoaderGeneration();
  if (g_cudart_missed_generation.load(std::memory_order_relaxed) == generation) return false;
  // Resolved into a local table first (loader calls, no lock held), published together: the
  // runtime's, else adapters over the driver when no runtime is loaded.
  CudartCore core;
  bool ok = true;
#define XT_FIND(field, fn) ok = ok && Find(#fn, &core.field);
  XT_CUDART_CORE(XT_FIND)
#undef XT_FIND
  if (!ok) ok = FillFromDriver(&core);
  if (!ok) {
    g_cudart_missed_generation.store(generation, std::memory_order_relaxed);
    return false;
  }
  std::lock_guard<std::mutex> lock(g_publish_mu);
  if (!g_cudart_ready.load(std::memory_order_relaxed)) {
    static_cast<CudartCore&>(g_api) = core;
    g_cudart_ready.store(true, std::memory_order_release);
  }
  return true;
}

}  // namespace hook
}  // namespace xtimer

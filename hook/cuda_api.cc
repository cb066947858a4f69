#include "hook/cuda_api.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>

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

void WarnUnresolved(const char* name, std::atomic<bool>* warned) {
  if (warned->exchange(true)) return;
  char buf[320];
  int n = snprintf(buf, sizeof(buf),
                   "xtimer[%d]: no loaded library defines %s (searched the global scope and every "
                   "loaded %s*); the call fails\n",
                   static_cast<int>(getpid()), name, LibraryStem(LibraryOf(name)));
  if (n > 0) {
    ssize_t ignored = write(2, buf, static_cast<size_t>(n) < sizeof(buf) ? n : sizeof(buf) - 1);
    (void)ignored;
  }
}

bool ResolveCudart() {
  if (g_cudart_ready.load(std::memory_order_acquire)) return true;
  unsigned long long generation = LoaderGeneration();
  if (g_cudart_missed_generation.load(std::memory_order_relaxed) == generation) return false;
  CudaApi found;
  bool ok = Find("cudaPeekAtLastError", &found.peek_at_last_error) &&
            Find("cudaGetLastError", &found.get_last_error) &&
            Find("cudaStreamIsCapturing", &found.stream_is_capturing) &&
            Find("cudaGetDevice", &found.get_device) && Find("cudaSetDevice", &found.set_device) &&
            Find("cudaEventCreateWithFlags", &found.event_create_with_flags) &&
            Find("cudaEventRecord", &found.event_record) &&
            Find("cudaEventQuery", &found.event_query) &&
            Find("cudaEventSynchronize", &found.event_synchronize) &&
            Find("cudaEventElapsedTime", &found.event_elapsed_time) &&
            Find("cudaStreamCreateWithFlags", &found.stream_create_with_flags);
  if (!ok) {
    g_cudart_missed_generation.store(generation, std::memory_order_relaxed);
    return false;
  }
  std::lock_guard<std::mutex> lock(g_publish_mu);
  if (!g_cudart_ready.load(std::memory_order_relaxed)) {
    g_api.peek_at_last_error = found.peek_at_last_error;
    g_api.get_last_error = found.get_last_error;
    g_api.stream_is_capturing = found.stream_is_capturing;
    g_api.get_device = found.get_device;
    g_api.set_device = found.set_device;
    g_api.event_create_with_flags = found.event_create_with_flags;
    g_api.event_record = found.event_record;
    g_api.event_query = found.event_query;
    g_api.event_synchronize = found.event_synchronize;
    g_api.event_elapsed_time = found.event_elapsed_time;
    g_api.stream_create_with_flags = found.stream_create_with_flags;
    g_cudart_ready.store(true, std::memory_order_release);
  }
  return true;
}

}  // namespace hook
}  // namespace xtimer

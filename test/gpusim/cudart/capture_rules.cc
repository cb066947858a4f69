#include "test/gpusim/cudart/capture_rules.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "test/gpusim/cudart/engine.h"

namespace xtsim {
namespace {

struct ActiveCapture {
  Stream* origin;
  cudaStreamCaptureMode mode;
  std::thread::id thread;
};

// Every capture sequence under way in the process. Captures are rare and short-lived next to
// the calls that check them, so a vector under a mutex, guarded by a count read without it.
std::mutex g_mu;
std::vector<ActiveCapture>* g_active = new std::vector<ActiveCapture>();  // never destroyed
std::atomic<int> g_count{0};

thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;

// Whether `c` forbids the calling thread's potentially unsafe calls (capture_rules.h).
bool Forbids(const ActiveCapture& c, std::thread::id self) {
  if (t_mode == cudaStreamCaptureModeRelaxed) return false;
  if (c.thread == self) return c.mode != cudaStreamCaptureModeRelaxed;
  return t_mode == cudaStreamCaptureModeGlobal && c.mode == cudaStreamCaptureModeGlobal;
}

}  // namespace

void ExchangeThreadCaptureMode(cudaStreamCaptureMode* mode) { std::swap(t_mode, *mode); }

void NoteCaptureBegun(Stream* origin, cudaStreamCaptureMode mode) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_active->push_back({origin, mode, std::this_thread::get_id()});
  g_count.store(static_cast<int>(g_active->size()), std::memory_order_release);
}

void NoteCaptureEnded(Stream* origin) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_active->erase(std::remove_if(g_active->begin(), g_active->end(),
                                 [origin](const ActiveCapture& c) { return c.origin == origin; }),
                  g_active->end());
  g_count.store(static_cast<int>(g_active->size()), std::memory_order_release);
}

cudaError_t CheckUnsafeCall() {
  if (g_count.load(std::memory_order_acquire) == 0) return cudaSuccess;
  const std::thread::id self = std::this_thread::get_id();
  bool forbidden = false;
  // Lock order g_mu, then a stream's: Stream calls NoteCapture* holding none of its own, and
  // removes itself before it is destroyed, so every origin here is alive.
  std::lock_guard<std::mutex> lock(g_mu);
  for (const ActiveCapture& c : *g_active) {
    if (!Forbids(c, self)) continue;
    c.origin->InvalidateCapture();
    forbidden = true;
  }
  return forbidden ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t CheckHostCallOn(Stream* s) {
  if (s->Capturing()) {
    s->InvalidateCapture();
    return cudaErrorStreamCaptureUnsupported;
  }
  return CheckUnsafeCall();
}

}  // namespace xtsim

// The capture census: how many stream captures the process has under way (State::captures), so
// that the hot path asks cudaStreamIsCapturing (432 ns on an H200) only while one may exist. The
// hook sees every capture begin and end through the runtime's and the driver's entry points
// (hooked_functions.inc; the driver's through dlsym and cuGetProcAddress too). A begin is counted
// before the real call (so no op of another thread skips the check while a capture starts) and
// taken back if it failed; an end counts when the capture sequence is over: success, or the
// capture was invalidated (the CUDA Runtime API's cudaStreamEndCapture: "If capture was
// invalidated, due to a violation of the rules of stream capture, then a NULL graph will be
// returned" and the sequence ends). Any other error leaves the capture counted: the check then
// stays on, the safe side. An end with no begin counted (a capture begun where the hook could not
// see) turns the census off for good: capture_unknown.
#ifndef XTIMER_HOOK_CAPTURE_CENSUS_H_
#define XTIMER_HOOK_CAPTURE_CENSUS_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "hook/recorder.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {

inline bool CaptureWasBegun(cudaError_t r) { return r == cudaSuccess; }
inline bool CaptureWasBegun(CUresult r) { return r == CUDA_SUCCESS; }
inline bool CaptureIsOver(cudaError_t r) {
  return r == cudaSuccess || r == cudaErrorStreamCaptureInvalidated;
}
inline bool CaptureIsOver(CUresult r) {
  return r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

// Counts one capture fewer; an end the census never saw begin makes it give up.
void CaptureEnded();

template <typename Call>
inline auto OnCaptureBegin(Call&& call) {
  if (!Enter()) return call();  // the runtime's own driver call: its shim counts the capture
  HookScope scope;
  GetState()->captures.fetch_add(1, std::memory_order_acq_rel);
  auto r = call();
  if (!CaptureWasBegun(r)) CaptureEnded();
  return r;
}

template <typename Call>
inline auto OnCaptureEnd(Call&& call) {
  if (!Enter()) return call();
  HookScope scope;
  auto r = call();
  if (CaptureIsOver(r)) CaptureEnded();
  return r;
}

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_CAPTURE_CENSUS_H_

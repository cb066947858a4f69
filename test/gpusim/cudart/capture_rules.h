// The rules of stream capture that reach beyond the captured stream: which threads may make
// "potentially unsafe" API calls while a capture is under way, and what happens when one does.
//
// Facts followed (CUDA Runtime API, cudaThreadExchangeStreamCaptureMode and
// cudaStreamBeginCapture; the driver API's cuThreadExchangeStreamCaptureMode says the same):
// - Each host thread has a capture interaction mode, cudaStreamCaptureModeGlobal by default,
//   swapped with cudaThreadExchangeStreamCaptureMode.
// - Global: the thread is prohibited from potentially unsafe API calls when it has an ongoing
//   capture sequence not begun with cudaStreamCaptureModeRelaxed, or when any other thread has a
//   concurrent capture sequence begun with cudaStreamCaptureModeGlobal.
// - ThreadLocal: prohibited only when the thread itself has such an ongoing capture; captures of
//   other threads are ignored.
// - Relaxed: not prohibited from potentially unsafe calls; still prohibited from calls that
//   necessarily conflict with capture (querying or synchronizing an event last recorded inside a
//   capture, or a capturing stream: those are checked where the handle is).
// - CUDA Programming Guide, "CUDA Graphs / Prohibited and Unhandled Operations": a prohibited
//   operation fails (cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is
//   capturing") and invalidates the capture sequence, whose cudaStreamEndCapture then returns
//   cudaErrorStreamCaptureInvalidated. PyTorch met exactly this when its NCCL watchdog thread
//   queried events during another thread's global capture (pytorch/pytorch#104487, fixed in
//   #148594 by querying under the thread-local mode).
// The documentation does not enumerate the potentially unsafe calls; the simulator treats as
// such those it names or that synchronize with or query the device: event and stream queries and
// synchronizations, device synchronization, synchronous copies and sets, and allocations
// (cudaMalloc is the documentation's own example).
#ifndef XTIMER_TEST_GPUSIM_CUDART_CAPTURE_RULES_H_
#define XTIMER_TEST_GPUSIM_CUDART_CAPTURE_RULES_H_

#include <cuda_runtime_api.h>

namespace xtsim {

class Stream;

// Swaps the calling thread's capture interaction mode (cudaThreadExchangeStreamCaptureMode).
void ExchangeThreadCaptureMode(cudaStreamCaptureMode* mode);

// A capture sequence begun on `origin` in `mode` by the calling thread / ended. Stream calls
// them under no lock of its own.
void NoteCaptureBegun(Stream* origin, cudaStreamCaptureMode mode);
void NoteCaptureEnded(Stream* origin);

// Called first by every potentially unsafe API call: cudaSuccess when the calling thread may
// make it; else invalidates the capture sequences that forbid it and returns
// cudaErrorStreamCaptureUnsupported. One relaxed atomic load when nothing is being captured.
cudaError_t CheckUnsafeCall();

// A host-blocking call (synchronize, query) on stream `s`: on a capturing stream it is not allowed
// and invalidates the capture (Programming Guide, "Prohibited and Unhandled Operations"); otherwise
// it is a potentially unsafe call (CheckUnsafeCall). One rule for the runtime and the driver.
cudaError_t CheckHostCallOn(Stream* s);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_CAPTURE_RULES_H_

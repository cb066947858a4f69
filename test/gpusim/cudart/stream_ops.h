// Stream operations that both front ends of the simulated GPU submit: the runtime API
// (runtime_api.cc, libcudart.so.13) and the driver API (test/gpusim/driver, libcuda.so.1). Each
// validates what the engine needs and returns a runtime error code; the driver maps it to its
// CUresult (the numbering of the shared errors is the same in both APIs).
#ifndef XTIMER_TEST_GPUSIM_CUDART_STREAM_OPS_H_
#define XTIMER_TEST_GPUSIM_CUDART_STREAM_OPS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/kernels.h"

namespace xtsim {

// Records `ev` at the stream's position (into the capture graph while the stream captures).
cudaError_t RecordEvent(Stream* s, const std::shared_ptr<EventState>& ev);
// Makes later work on `s` wait for the latest record of `ev`; joins its capture when it was
// recorded during one; a no-op for an event never recorded.
cudaError_t WaitEvent(Stream* s, const std::shared_ptr<EventState>& ev);
// cudaSuccess once the latest record has executed and the wall clock reached it, else
// cudaErrorNotReady.
cudaError_t QueryEvent(EventState& ev);
// Blocks until the latest record has executed and the wall clock reached it.
void SynchronizeEvent(EventState& ev);
// Milliseconds between two completed records; the documented errors otherwise.
cudaError_t ElapsedTime(EventState& start, EventState& end, float* ms);

// A copy of `count` bytes; fails when either range runs past the end of its allocation.
cudaError_t SubmitCopy(Stream* s, void* dst, const void* src, size_t count, cudaMemcpyKind kind);
// Sets `count` elements of `element_size` (1, 2 or 4) bytes at dst to `value`.
cudaError_t SubmitFill(Stream* s, void* dst, uint32_t value, size_t element_size, size_t count);
// A kernel: keeps the stream busy for its modelled duration.
cudaError_t SubmitKernel(Stream* s, const KernelInfo& k);
// Replays an instantiated graph on `s` (one launch-queue entry).
cudaError_t LaunchGraph(const GraphExec& exec, Stream* s);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_STREAM_OPS_H_

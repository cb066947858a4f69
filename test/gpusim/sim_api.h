// The private C ABI between the simulated GPU (the engine, in the simulated driver
// libcuda.so.1) and the other simulated libraries (libcublas.so.13, libcublasLt.so.13,
// libnccl.so.2).
//
// The real cuBLAS and NCCL drive the GPU through their own private paths, not through the public
// runtime API, so a preloaded hook never sees their internal launches. The simulator keeps that
// property: cuBLAS and NCCL put work on a stream through this table, never through cudaLaunchKernel.
//
// The engine owns every device, stream and event; the runtime (libcudart.so.13) and the driver API
// are its front ends. libcuda.so.1 exports one function, `xtsim_get_api`; the other libraries look
// it up at run time (see sim_api_client.h), so that they need no CUDA runtime, like the real ones.
//
// Time model. Every stream has a tail: the simulated time (CLOCK_MONOTONIC nanoseconds, the same
// clock in every process of the machine) at which its last queued operation finishes. An operation
// enqueued at host time t starts at max(t, tail, times of events it waits on) and moves the tail to
// its end. Host-blocking calls (cudaStreamSynchronize, ...) return once the wall clock reaches the
// tail, so measured host times agree with the modelled GPU times.
//
// Thread safety: every function may be called from any thread.
#ifndef XTIMER_TEST_GPUSIM_SIM_API_H_
#define XTIMER_TEST_GPUSIM_SIM_API_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XTSIM_API_VERSION 1u

// enqueue_busy flags.
#define XTSIM_OP_COMPUTE 1u  // a kernel or GEMM: the rank's XTIMER_SIM_SLOW_RANKS factor applies.

// A task runs on the stream's executor thread, in stream order, once the operations before it are
// done. `start_ns` is the simulated time at which it may begin; it returns the simulated time at
// which it ends (>= start_ns). It may block (a collective waits for its peers). A task captured
// into a CUDA graph runs once per graph launch; `release` is called exactly once, after the last run
// (right after the run when not captured, or when the graph is destroyed).
typedef int64_t (*XtsimTaskRun)(void* ctx, int64_t start_ns);
typedef void (*XtsimTaskRelease)(void* ctx);

typedef struct XtsimApi {
  uint32_t version;      // XTSIM_API_VERSION
  uint32_t struct_size;  // sizeof(XtsimApi) of the runtime that filled it

  // CLOCK_MONOTONIC in nanoseconds.
  int64_t (*now_ns)(void);

  // Returns cudaSuccess when `stream` is a valid handle (0, cudaStreamLegacy, cudaStreamPerThread
  // or a live created stream), else cudaErrorInvalidResourceHandle. Stores its device in *device
  // when device is not NULL.
  cudaError_t (*stream_check)(cudaStream_t stream, int* device);

  // The calling thread's current device (cudaGetDevice without touching the last error).
  int (*current_device)(void);

  // Appends an operation that keeps `stream` busy for duration_ns (scaled by the rank's slow
  // factor when flags has XTSIM_OP_COMPUTE). Honors stream capture. `name` must outlive the call
  // only. Returns cudaSuccess or the error the runtime would give for the stream.
  cudaError_t (*enqueue_busy)(cudaStream_t stream, const char* name, int64_t duration_ns,
                              unsigned flags);

  // Appends a task (see XtsimTaskRun). Honors stream capture. On error the task is released at
  // once and never run.
  cudaError_t (*enqueue_task)(cudaStream_t stream, const char* name, XtsimTaskRun run,
                              XtsimTaskRelease release, void* ctx);

  // Device memory as cudaMalloc/cudaFree give it, without touching the last error.
  cudaError_t (*device_malloc)(void** ptr, size_t size);
  cudaError_t (*device_free)(void* ptr);

  // 1 when `stream` is being captured into a graph (cudaStreamCaptureStatusActive), else 0;
  // touches no last error. NULL in a table whose struct_size does not cover it.
  int (*stream_capturing)(cudaStream_t stream);
} XtsimApi;

// Returns the table when the runtime speaks `version`, else NULL.
const XtsimApi* xtsim_get_api(uint32_t version);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // XTIMER_TEST_GPUSIM_SIM_API_H_

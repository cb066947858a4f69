// Device code for the driver-API test programs (triton_style, xla_style, cupy_style), compiled to
// a cubin that they load with cuModuleLoadData, as Triton loads the cubin of a compiled kernel.
// extern "C" names, as Triton and NVRTC-compiled CuPy kernels have.
extern "C" __global__ void triton_poi_fused_add_0(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

extern "C" __global__ void triton_red_fused_sum_1(float* out, const float* in, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = in[0] * n;
}

// Holds a stream (XTIMER_SIM_KERNEL_TIMES makes it long) so that the timed work after it queues
// on the simulated GPU even when the host is slow: measured times are then the model's. Left out
// by the tests' XTIMER_KERNEL_FILTER.
extern "C" __global__ void hold_stream(int) {}

// Simulated device memory: ordinary host memory (so copies move real bytes), accounted per device
// against a configured capacity, with a registry that answers pointer-attribute queries.
#ifndef XTIMER_TEST_GPUSIM_CUDART_MEMORY_H_
#define XTIMER_TEST_GPUSIM_CUDART_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace xtsim {

enum class MemKind { kDevice, kManaged, kHostPinned, kHostRegistered };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  MemKind kind = MemKind::kDevice;
  int device = 0;
  unsigned flags = 0;
};

// Capacity of each simulated device in bytes (XTIMER_SIM_DEVICE_MEM_GIB, default 80).
size_t DeviceCapacity();
size_t DeviceAllocated(int device);

// cudaMalloc / cudaMallocManaged / cudaMallocHost semantics; size 0 gives *ptr = nullptr.
cudaError_t Allocate(void** ptr, size_t size, MemKind kind, int device, unsigned flags);
// Frees an allocation of one of `kinds` (a bit set of 1 << MemKind) that starts at ptr.
// nullptr is a no-op. cudaErrorInvalidValue for anything else.
cudaError_t FreeAllocation(void* ptr, unsigned kinds);
// Stream-ordered free of device memory (runs when the stream reaches it).
void FreeDeviceMemory(void* ptr);
cudaError_t RegisterHost(void* ptr, size_t size, unsigned flags);
cudaError_t UnregisterHost(void* ptr);

// The allocation that contains [ptr, ptr + bytes), if any. Returns false when ptr is not inside a
// known allocation; returns true but sets *overflows when the range runs past its end.
bool FindAllocation(const void* ptr, size_t bytes, Allocation* out, bool* overflows);

constexpr unsigned KindBit(MemKind k) { return 1u << static_cast<unsigned>(k); }

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_MEMORY_H_

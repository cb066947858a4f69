#include "test/gpusim/cudart/memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace {

// Large allocations are reserved lazily (pages appear on first touch), so a program can "use"
// tens of GiB of simulated device memory without the host providing it.
constexpr size_t kMmapThreshold = 1 << 20;
constexpr size_t kAlignment = 256;  // cudaMalloc guarantees at least 256-byte alignment

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Allocation> by_base;
  std::vector<size_t> allocated;  // per device, device + managed bytes
};

Registry& Reg() {
  static Registry* r = new Registry();  // never destroyed: memory may be freed after main()
  return *r;
}

void* RawAlloc(size_t size) {
  if (size >= kMmapThreshold) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* p = nullptr;
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  return posix_memalign(&p, kAlignment, rounded) == 0 ? p : nullptr;
}

void RawFree(void* p, size_t size) {
  if (size >= kMmapThreshold) {
    munmap(p, size);
  } else {
    free(p);
  }
}

bool CountsAgainstDevice(MemKind k) { return k == MemKind::kDevice || k == MemKind::kManaged; }

}  // namespace

size_t DeviceCapacity() {
  static const size_t capacity = [] {
    double gib = EnvDouble("XTIMER_SIM_DEVICE_MEM_GIB", 80.0);
    if (gib <= 0 || gib > 4096) Fatal("XTIMER_SIM_DEVICE_MEM_GIB=%g is out of range (0, 4096]", gib);
    return static_cast<size_t>(gib * 1024 * 1024 * 1024);
  }();
  return capacity;
}

size_t DeviceAllocated(int device) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  return static_cast<size_t>(device) < r.allocated.size() ? r.allocated[static_cast<size_t>(device)]
                                                          : 0;
}

cudaError_t Allocate(void** ptr, size_t size, MemKind kind, int device, unsigned flags) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  Registry& r = Reg();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.allocated.size() <= static_cast<size_t>(device)) {
      r.allocated.resize(static_cast<size_t>(device) + 1, 0);
    }
    if (CountsAgainstDevice(kind) && r.allocated[static_cast<size_t>(device)] + size > DeviceCapacity()) {
      return cudaErrorMemoryAllocation;
    }
  }
  void* p = RawAlloc(size);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = size;
  a.kind = kind;
  a.device = device;
  a.flags = flags;
  std::lock_guard<std::mutex> lock(r.mu);
  if (CountsAgainstDevice(kind)) r.allocated[static_cast<size_t>(device)] += size;
  r.by_base[a.base] = a;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t FreeAllocation(void* ptr, unsigned kinds) {
  if (ptr == nullptr) return cudaSuccess;
  Registry& r = Reg();
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.by_base.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.by_base.end() || (KindBit(it->second.kind) & kinds) == 0 ||
        it->second.kind == MemKind::kHostRegistered) {
      return cudaErrorInvalidValue;
    }
    a = it->second;
    r.by_base.erase(it);
    if (CountsAgainstDevice(a.kind)) r.allocated[static_cast<size_t>(a.device)] -= a.size;
  }
  RawFree(ptr, a.size);
  return cudaSuccess;
}

void FreeDeviceMemory(void* ptr) {
  if (FreeAllocation(ptr, KindBit(MemKind::kDevice) | KindBit(MemKind::kManaged)) != cudaSuccess) {
    Warn("cudaFreeAsync: %p is not a live device allocation", ptr);
  }
}

cudaError_t RegisterHost(void* ptr, size_t size, unsigned flags) {
  if (ptr == nullptr || size == 0) return cudaErrorInvalidValue;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  auto next = r.by_base.lower_bound(base);
  if (next != r.by_base.end() && next->first < base + size) return cudaErrorHostMemoryAlreadyRegistered;
  if (next != r.by_base.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > base) return cudaErrorHostMemoryAlreadyRegistered;
  }
  Allocation a;
  a.base = base;
  a.size = size;
  a.kind = MemKind::kHostRegistered;
  a.flags = flags;
  r.by_base[base] = a;
  return cudaSuccess;
}

cudaError_t UnregisterHost(void* ptr) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == r.by_base.end() || it->second.kind != MemKind::kHostRegistered) {
    return cudaErrorHostMemoryNotRegistered;
  }
  r.by_base.erase(it);
  return cudaSuccess;
}

bool FindAllocation(const void* ptr, size_t bytes, Allocation* out, bool* overflows) {
  Registry& r = Reg();
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.upper_bound(p);
  if (it == r.by_base.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (p >= a.base + a.size) return false;
  if (out != nullptr) *out = a;
  if (overflows != nullptr) *overflows = bytes > a.base + a.size - p;
  return true;
}

}  // namespace xtsim

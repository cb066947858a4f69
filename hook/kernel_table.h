// Kernel names and the XTIMER_KERNEL_FILTER decision, cached per function.
// Every kernel is timed unless a filter narrows the choice or kernels are off (docs/hook.md).
//
// nvcc-built programs launch through __cudaLaunchKernel(cudaKernel_t, ...) after
// __cudaGetKernel(&handle, host_function): MapHandle remembers handle -> host function. A host
// function's name (demangled) is fetched and matched against the filter once (cold path, may
// allocate); later launches find the cached answer with a lock-free probe (hot path).
#ifndef XTIMER_HOOK_KERNEL_TABLE_H_
#define XTIMER_HOOK_KERNEL_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace xtimer {
namespace hook {

class KernelTable {
 public:
  static constexpr size_t kSlots = 8192;
  // Distinct names per process. A timed kernel beyond them is timed without a name (name id 0),
  // so the daemon's and the trace's name tables stay bounded.
  static constexpr size_t kMaxNames = 2048;

  // Turns kernel timing on: `filter` is an ECMAScript regex searched in the demangled name;
  // empty: every kernel is timed. Returns false (and times nothing) when it does not compile.
  // Without a call no kernel is timed (XTIMER_KERNEL_FILTER=off).
  bool SetFilter(const std::string& filter);
  bool filter_enabled() const { return filter_enabled_; }

  void MapHandle(const void* handle, const void* function);
  const void* FunctionOf(const void* handle) const;  // null if unknown

  // The cached decision for `function`, lock-free: *known false means call Classify. Returns
  // true and sets *name_id when the kernel is timed.
  bool Cached(const void* function, bool* known, uint32_t* name_id) const {
    uintptr_t v = 0;
    *known = Find(functions_.get(), function, &v);
    if (!*known || v == 1) return false;
    *name_id = static_cast<uint32_t>(v >> 1);
    return true;
  }
  // Cold path: `mangled` is the name the runtime gives (null if unknown). Caches and returns the
  // decision; a timed kernel gets a name id (1, 2, ..., kMaxNames; then 0, unnamed). A kernel
  // that finds no free slot is not timed (and not cached).
  bool Classify(const void* function, const char* mangled, uint32_t* name_id);

  // Makes `alias` (a cudaKernel_t handle) share the cached decision of `function` (classified).
  void Alias(const void* alias, const void* function);

  // The demangled name of `name_id`, or empty. Thread-safe (takes the mutex; cold).
  std::string Name(uint32_t name_id);

 private:
  struct Slot {
    std::atomic<const void*> key{nullptr};
    std::atomic<uintptr_t> value{0};
  };
  static size_t SlotOf(const void* p) {
    uint64_t x = reinterpret_cast<uintptr_t>(p);
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    return static_cast<size_t>(x) & (kSlots - 1);
  }
  static bool Find(const Slot* table, const void* key, uintptr_t* value) {
    size_t i = SlotOf(key);
    for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
      const void* k = table[i].key.load(std::memory_order_acquire);
      if (k == key) {
        *value = table[i].value.load(std::memory_order_relaxed);
        return true;
      }
      if (k == nullptr) return false;
    }
    return false;
  }
  static bool Put(Slot* table, const void* key, uintptr_t value);  // false: the table is full

  bool filter_enabled_ = false;
  std::unique_ptr<std::regex> filter_;
  std::unique_ptr<Slot[]> handles_{new Slot[kSlots]};
  // value: 1 = not timed, (name_id << 1) = timed (0: timed, unnamed).
  std::unique_ptr<Slot[]> functions_{new Slot[kSlots]};
  std::mutex mu_;
  std::vector<std::string> names_;  // names_[id - 1]
};

// abi::__cxa_demangle, or the input when it is not a mangled C++ name.
std::string Demangle(const char* mangled);

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_KERNEL_TABLE_H_

// Tracks the live heap objects of one kind (cuBLAS handles, cuBLASLt handles, descriptors) so that
// a destroyed or foreign pointer is recognised without being dereferenced: use after destroy is
// reported as an error status instead of reading freed memory.
#ifndef XTIMER_TEST_GPUSIM_CUBLAS_OBJECT_REGISTRY_H_
#define XTIMER_TEST_GPUSIM_CUBLAS_OBJECT_REGISTRY_H_

#include <cstddef>
#include <mutex>
#include <unordered_set>

namespace xtsim {
namespace blas {

// Thread safe. Intended to be leaked (`static ObjectRegistry* r = new ObjectRegistry;`) so that
// handles destroyed by other static destructors at exit still find it.
class ObjectRegistry {
 public:
  // Records `p` as live (and forgets that an earlier object at the same address was removed).
  void Add(const void* p);
  // Returns false when `p` is not live. Otherwise removes it and remembers it as recently removed.
  bool Remove(const void* p);
  bool Contains(const void* p) const;
  // True when `p` was removed among the last kRemembered removals and not added again.
  bool RecentlyRemoved(const void* p) const;
  // Forgets a removal at `p` (the caller reuses the address for an object it does not Add).
  void ForgetRemoved(const void* p);

  static constexpr size_t kRemembered = 1024;

 private:
  mutable std::mutex mu_;
  std::unordered_set<const void*> live_;
  const void* removed_[kRemembered] = {};
  size_t next_removed_ = 0;
};

// The live object behind `handle` (a type with a `magic` member and a `kMagic` constant), or
// nullptr for null, destroyed or foreign handles. Never dereferences a pointer `registry` does not
// know.
template <typename Context>
Context* LiveObject(const ObjectRegistry& registry, Context* handle) {
  if (handle == nullptr || !registry.Contains(handle)) return nullptr;
  return handle->magic == Context::kMagic ? handle : nullptr;
}

}  // namespace blas
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUBLAS_OBJECT_REGISTRY_H_

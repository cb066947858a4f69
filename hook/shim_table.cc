#include "hook/shim_table.h"

#include <cstring>
#include <initializer_list>

namespace xtimer {
namespace hook {

const ShimEntry* FindShim(const char* name) {
  // Every hooked name starts with "cu", "__cuda" or "nccl": most lookups (Python's
  // PyInit_*, ...) stop at the first bytes.
  if (name == nullptr ||
      (strncmp(name, "cu", 2) != 0 && strncmp(name, "__cuda", 6) != 0 &&
       strncmp(name, "nccl", 4) != 0)) {
    return nullptr;
  }
  for (ShimTable t : {CudartShims(), CublasShims(), NcclShims(), DriverShims()}) {
    for (size_t i = 0; i < t.count; ++i) {
      if (strcmp(t.entries[i].name, name) == 0) return &t.entries[i];
    }
  }
  return nullptr;
}

const ShimEntry* FindDriverShim(const char* base, bool per_thread) {
  if (base == nullptr) return nullptr;
  ShimTable t = DriverShims();
  for (size_t i = 0; i < t.count; ++i) {
    const ShimEntry& e = t.entries[i];
    if (e.per_thread == per_thread && strcmp(e.base, base) == 0) return &e;
  }
  return nullptr;
}

}  // namespace hook
}  // namespace xtimer

#include "test/gpusim/driver/proc_table.h"

#include <algorithm>
#include <cstring>
#include <string>

// Every function the real libcuda.so.1 exports (generated from its stub library): the simulator's
// definition, or its "not implemented" fallback. Declared with a dummy type: only addresses are
// taken. libcuda.so.1 is linked with -Bsymbolic-functions, so these are this library's own
// definitions even when a preloaded library interposes the same names.
#define XTSIM_EXPORT(name) extern "C" int name();
#include "test/gpusim/driver/libcuda_exports.inc"
#undef XTSIM_EXPORT

namespace xtsim {
namespace driver {
namespace {

struct Entry {
  const char* name;
  void* fn;
};

#define XTSIM_EXPORT(name) {#name, reinterpret_cast<void*>(&name)},
const Entry kEntries[] = {
#include "test/gpusim/driver/libcuda_exports.inc"
};
#undef XTSIM_EXPORT

void* Find(const std::string& name) {
  // The generator writes the names sorted.
  const Entry* end = kEntries + sizeof(kEntries) / sizeof(kEntries[0]);
  const Entry* it = std::lower_bound(kEntries, end, name, [](const Entry& e, const std::string& n) {
    return strcmp(e.name, n.c_str()) < 0;
  });
  return it != end && name == it->name ? it->fn : nullptr;
}

}  // namespace

void* LookupProc(const char* symbol, int, bool per_thread) {
  // The export cuda.h maps the name to (abi_names.inc), else the name itself.
  struct Abi {
    const char* base;
    const char* by_default;
    const char* per_thread;
  };
#define XTSIM_ABI(base, by_default, per_thread) {base, by_default, per_thread},
  static const Abi kAbi[] = {
#include "test/gpusim/driver/abi_names.inc"
  };
#undef XTSIM_ABI
  for (const Abi& a : kAbi) {
    if (strcmp(a.base, symbol) == 0) return Find(per_thread ? a.per_thread : a.by_default);
  }
  return Find(symbol);
}

}  // namespace driver
}  // namespace xtsim

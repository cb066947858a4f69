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
  std::string base(symbol);
  if (base.empty()) return nullptr;
  // Newest ABI first; "_v1" is spelled without a suffix.
  for (const char* suffix : {"_ptsz", "_ptds", ""}) {
    if (!per_thread && *suffix != '\0') continue;
    for (int v = 9; v >= 1; --v) {
      std::string name = base + (v > 1 ? "_v" + std::to_string(v) : std::string()) + suffix;
      if (void* fn = Find(name)) return fn;
    }
  }
  return nullptr;
}

}  // namespace driver
}  // namespace xtsim

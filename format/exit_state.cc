#include "format/exit_state.h"

namespace xtimer {
namespace format {

ExitState DecodeExitState(uint64_t word) {
  const uint32_t kind = static_cast<uint32_t>(word >> 32);
  const uint32_t value = static_cast<uint32_t>(word);
  ExitState out;
  if (kind == static_cast<uint32_t>(ExitKind::kExited) && value <= 255) {
    out.kind = ExitKind::kExited;
  } else if (kind == static_cast<uint32_t>(ExitKind::kSignal) && value >= 1 && value <= 64) {
    out.kind = ExitKind::kSignal;
  } else {
    return out;
  }
  out.value = static_cast<int>(value);
  return out;
}

const char* ExitKindName(ExitKind kind) {
  switch (kind) {
    case ExitKind::kExited: return "exit";
    case ExitKind::kSignal: return "signal";
    case ExitKind::kNone: break;
  }
  return "connection_lost";
}

}  // namespace format
}  // namespace xtimer

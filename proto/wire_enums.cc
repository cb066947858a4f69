#include "proto/wire_enums.h"

#include "format/record.h"

namespace xtimer {
namespace proto {

OpCode::Value OpCodeOf(uint16_t op) {
  return OpCode::Value_IsValid(op) ? static_cast<OpCode::Value>(op) : OpCode::Unknown;
}

DTypeCode::Value DTypeCodeOf(uint8_t dtype) {
  return DTypeCode::Value_IsValid(dtype) ? static_cast<DTypeCode::Value>(dtype)
                                         : DTypeCode::unknown;
}

ExitCauseCode::Value ExitCauseCodeOf(format::ExitKind kind) {
  switch (kind) {
    case format::ExitKind::kExited: return ExitCauseCode::exit;
    case format::ExitKind::kSignal: return ExitCauseCode::signal;
    case format::ExitKind::kNone: break;
  }
  return ExitCauseCode::connection_lost;
}

uint16_t OperationOf(OpCode::Value op) {
  return OpCode::Value_IsValid(op) ? static_cast<uint16_t>(op)
                                   : static_cast<uint16_t>(format::Operation::kUnknown);
}

uint8_t DTypeOf(DTypeCode::Value dtype) {
  return DTypeCode::Value_IsValid(dtype) ? static_cast<uint8_t>(dtype)
                                         : static_cast<uint8_t>(format::DType::kUnknown);
}

}  // namespace proto
}  // namespace xtimer

#include "proto/wire_enums.h"

#include "format/record.h"
#include "format/exit_state.h"

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
  // The wire's value names are format's spelling of the causes (wire_enums_test parses each).
  ExitCauseCode::Value code = ExitCauseCode::connection_lost;
  ExitCauseCode::Value_Parse(format::ExitKindName(kind), &code);
  return code;
}

uint16_t OperationOf(OpCode::Value op) {
  return OpCode::Value_IsValid(op) ? static_cast<uint16_t>(op)
                                   : static_cast<uint16_t>(format::Operation::kUnknown);
}

uint8_t DTypeOf(DTypeCode::Value dtype) {
  return DTypeCode::Value_IsValid(dtype) ? static_cast<uint8_t>(dtype)
                                         : static_cast<uint8_t>(format::DType::kUnknown);
}

std::optional<format::ExitKind> ExitKindOf(ExitCauseCode::Value code) {
  for (format::ExitKind kind : format::kExitKinds) {
    if (ExitCauseCodeOf(kind) == code) return kind;
  }
  return std::nullopt;
}

}  // namespace proto
}  // namespace xtimer

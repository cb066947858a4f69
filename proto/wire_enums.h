// The control service's enumerations (hosting.proto) from and to the record format's values.
//
// OpCode and DTypeCode carry format::Operation's and format::DType's numbers and names, pinned
// by wire_enums_test, so the conversions are checked casts; ExitCauseCode names the ring's exit
// state as the metrics' `cause` label does.
#ifndef XTIMER_PROTO_WIRE_ENUMS_H_
#define XTIMER_PROTO_WIRE_ENUMS_H_

#include <cstdint>
#include <optional>

#include "format/exit_state.h"
#include "proto/hosting.pb.h"

namespace xtimer {
namespace proto {

// A record's op (format::Operation) on the wire; a value the format does not define: Unknown.
OpCode::Value OpCodeOf(uint16_t op);
// A record's dtype (format::DType) on the wire; a value the format does not define: unknown.
DTypeCode::Value DTypeCodeOf(uint8_t dtype);
// The ring's exit state of a process that is gone; kNone (no exit marker): connection_lost.
ExitCauseCode::Value ExitCauseCodeOf(format::ExitKind kind);

// The inverses, for readers of an answer (a value from a newer daemon: the format's unknown).
uint16_t OperationOf(OpCode::Value op);
uint8_t DTypeOf(DTypeCode::Value dtype);
// A process's exit cause from the wire; nullopt for a value no format::ExitKind names (unset, or
// from a newer daemon).
std::optional<format::ExitKind> ExitKindOf(ExitCauseCode::Value code);

}  // namespace proto
}  // namespace xtimer

#endif  // XTIMER_PROTO_WIRE_ENUMS_H_

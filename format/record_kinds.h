// The record kinds a reader accepts, as a table indexed by the record's type byte: one entry per
// kind, with its name and its validator. Readers look a record's kind up in the table, never in a
// switch, so a new kind (stacks, NVTX ranges, ...) is one Register call here and one ingest
// registration in the daemon (daemon/model/aggregator.h AddRecordKind), plus its writer.
#ifndef XTIMER_FORMAT_RECORD_KINDS_H_
#define XTIMER_FORMAT_RECORD_KINDS_H_

#include <array>
#include <cstdint>

#include "format/record.h"

namespace xtimer {
namespace format {

struct RecordKind {
  const char* name = nullptr;  // "op", "name", "comm", ...; nullptr: no such kind
  // nullptr when the slot's fields are well formed for this kind, else a short reason. The slot
  // was copied out of untrusted memory: check every field before use.
  const char* (*validate)(const RecordSlot& slot) = nullptr;
};

class RecordKinds {
 public:
  // The kinds every reader knows: kOp, kName, kComm, kNvtx and kNvtxString (format/record.h).
  static const RecordKinds& Builtin();

  // Adds (or replaces) the kind of records whose type byte is `type`. Not thread safe: register
  // before any reader uses the table.
  void Register(uint8_t type, RecordKind kind);
  // The kind of `type`, or nullptr when none is registered.
  const RecordKind* Find(uint8_t type) const;
  // nullptr when the slot has this table's record version, a registered type and valid fields;
  // else why not ("unknown record version", "unknown record type", or the kind's reason).
  const char* Validate(const RecordSlot& slot) const;

 private:
  std::array<RecordKind, 256> kinds_{};
};

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_RECORD_KINDS_H_

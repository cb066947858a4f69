#include "format/record_kinds.h"

namespace xtimer {
namespace format {
namespace {

// Range checks as one unsigned comparison each (a negative value wraps above the bound): every
// record read from a ring passes here.
constexpr uint64_t kMaxDurationNs = uint64_t{86400} * 1000000000;  // a day

// Whether both times are in [0, kMaxTimeNs): kMaxTimeNs is a power of two, so one comparison of
// their bits (a negative time has the sign bit set).
bool TimesInRange(int64_t a, int64_t b) {
  return (static_cast<uint64_t>(a) | static_cast<uint64_t>(b)) < uint64_t{kMaxTimeNs};
}

const char* ValidateOp(const RecordSlot& slot) {
  const OpRecord& r = slot.op;
  const uint8_t kind = KindOfOperation(r.op);
  if (kind == 0) return "unknown operation";
  if (kind != r.kind) return "operation does not match its kind";
  if (r.dtype > kDTypeMax) return "unknown dtype";
  if (static_cast<uint64_t>(r.duration_ns) > kMaxDurationNs) return "duration out of range";
  if (!TimesInRange(r.cpu_launch_ns, r.gpu_start_ns)) return "time out of range";
  if ((r.m | r.n | r.k | r.batch) < 0) return "negative GEMM dimension";  // a sign bit set
  if (static_cast<uint32_t>(r.comm_size) > uint32_t{kMaxCommSize}) {
    return "communicator size out of range";
  }
  // A host sync issued while the application had a CUDA error pending, on a thread whose
  // device the hook never learned, carries device -1 (unknown).
  const int64_t min_device = kind == static_cast<uint8_t>(OpKind::kHostSync) ? -1 : 0;
  if (static_cast<uint64_t>(r.device - min_device) >
      static_cast<uint64_t>(kMaxDevice - min_device)) {
    return "device out of range";
  }
  return nullptr;
}

const char* ValidateName(const RecordSlot& slot) {
  if (slot.name.length > kNameChunk) return "name chunk too long";
  if (slot.name.name_id == 0) return "name id 0";
  return nullptr;
}

const char* ValidateComm(const RecordSlot& slot) {
  if (slot.comm.size <= 0 || slot.comm.size > kMaxCommSize) return "communicator size out of range";
  if (slot.comm.rank < 0 || slot.comm.rank >= slot.comm.size) return "rank out of range";
  return nullptr;
}

const char* ValidateNvtx(const RecordSlot& slot) {
  const NvtxRecord& r = slot.nvtx;
  if (r.event == 0 || r.event > kNvtxEventMax) return "unknown NVTX event";
  const auto event = static_cast<NvtxEvent>(r.event);
  if (event == NvtxEvent::kRange || event == NvtxEvent::kMark) {
    // In unsigned arithmetic: the signed difference of two untrusted times can overflow. Once
    // end >= start the unsigned difference is the true one, so the range's readers may subtract.
    if (r.end_ns < r.start_ns ||
        static_cast<uint64_t>(r.end_ns) - static_cast<uint64_t>(r.start_ns) > kMaxDurationNs) {
      return "NVTX range duration out of range";
    }
  }
  if (!TimesInRange(r.start_ns, r.end_ns)) return "NVTX time out of range";
  if (event == NvtxEvent::kRange && static_cast<uint32_t>(r.depth) >= uint32_t{kMaxNvtxDepth}) {
    return "NVTX depth out of range";
  }
  return nullptr;
}

RecordKinds MakeBuiltin() {
  RecordKinds kinds;
  kinds.Register(static_cast<uint8_t>(RecordType::kOp), {"op", ValidateOp});
  kinds.Register(static_cast<uint8_t>(RecordType::kName), {"name", ValidateName});
  kinds.Register(static_cast<uint8_t>(RecordType::kComm), {"comm", ValidateComm});
  kinds.Register(static_cast<uint8_t>(RecordType::kNvtx), {"nvtx", ValidateNvtx});
  kinds.Register(static_cast<uint8_t>(RecordType::kNvtxString), {"nvtx_string", ValidateName});
  return kinds;
}

}  // namespace

const RecordKinds& RecordKinds::Builtin() {
  static const RecordKinds builtin = MakeBuiltin();
  return builtin;
}

void RecordKinds::Register(uint8_t type, RecordKind kind) { kinds_[type] = kind; }

const RecordKind* RecordKinds::Find(uint8_t type) const {
  const RecordKind& k = kinds_[type];
  return k.validate != nullptr ? &k : nullptr;
}

const char* RecordKinds::Validate(const RecordSlot& slot) const {
  if (slot.header.version != kRecordVersion) return "unknown record version";
  const RecordKind* kind = Find(slot.header.type);
  if (kind == nullptr) return "unknown record type";
  return kind->validate(slot);
}

const char* Validate(const RecordSlot& slot) { return RecordKinds::Builtin().Validate(slot); }

}  // namespace format
}  // namespace xtimer

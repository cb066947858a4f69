// The one contract between libxtimer.so (writer) and xtimerd (reader): fixed-size records.
//
// Framing. A record is exactly 128 bytes, little-endian, naturally aligned, no pointers. Its first
// two bytes are the record version (kRecordVersion); the third its RecordType. A reader rejects a
// record whose version or type it does not know, and validates every field before use: the
// shared memory it comes from is written by another process and may hold anything.
//
// Types:
//   kOp       one timed operation (a GEMM, a collective, a copy, a kernel, a graph launch, or the
//             time the host spent blocked in a synchronising call), written when it completes.
//   kName     a chunk of a kernel name: names are long, so a name is sent as parts 0..n-1 of up to
//             kNameChunk bytes, the last with kNameLast; OpRecord::name_id refers to it. A name is
//             sent once per process, before the first op that uses it.
//   kComm     a communicator this process joined: id, this rank's place in it, its size.
//   kNvtx     an NVTX event of the application (hook/nvtx_injection.cc): a push/pop range
//             (written at its pop, with both times), the start or the end of a start/end range,
//             or a mark. Its strings (message, domain name) are NVTX string ids.
//   kNvtxString  a chunk of an NVTX string (a message, a domain's name, a registered string),
//             framed exactly as kName (a NameRecord with this type); its ids are a space of their
//             own (1, 2, ... per process), sent once per process before the first kNvtx using it.
//
// Times are CLOCK_REALTIME nanoseconds (host clock, comparable across processes of a node). GPU
// times are aligned to that clock by the writer (see hook/), so cpu_launch_ns <= gpu_start_ns
// holds up to the alignment error.
#ifndef XTIMER_FORMAT_RECORD_H_
#define XTIMER_FORMAT_RECORD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace xtimer {
namespace format {

constexpr uint16_t kRecordVersion = 1;
constexpr size_t kRecordSize = 128;

enum class RecordType : uint8_t { kOp = 1, kName = 2, kComm = 3, kNvtx = 4, kNvtxString = 5 };

// What an operation is, for metrics. Values are stable (they are in files).
enum class OpKind : uint8_t {
  kMatmul = 1,
  kCollective = 2,
  kP2P = 3,
  kMemcpy = 4,
  kMemset = 5,
  kKernel = 6,
  kGraph = 7,
  kHostSync = 8,
};
constexpr uint8_t kOpKindMax = 8;

// The intercepted call. Values are stable.
enum class Operation : uint16_t {
  kUnknown = 0,
  // matmul
  kGemmEx = 1,
  kSgemm = 2,
  kDgemm = 3,
  kHgemm = 4,
  kGemmStridedBatchedEx = 5,
  kSgemmStridedBatched = 6,
  kDgemmStridedBatched = 7,
  kHgemmStridedBatched = 8,
  kGemmBatchedEx = 9,
  kLtMatmul = 10,
  // collectives
  kAllReduce = 32,
  kAllGather = 33,
  kReduceScatter = 34,
  kBroadcast = 35,
  kReduce = 36,
  kAlltoAll = 37,
  kGather = 38,
  kScatter = 39,
  // point to point
  kSend = 48,
  kRecv = 49,
  // copies and sets
  kMemcpyHtoD = 64,
  kMemcpyDtoH = 65,
  kMemcpyDtoD = 66,
  kMemcpyHtoH = 67,
  kMemcpyDefault = 68,
  kMemset = 72,
  // kernels and graphs
  kKernelLaunch = 80,
  kGraphLaunch = 81,
  // host blocked
  kStreamSynchronize = 96,
  kDeviceSynchronize = 97,
  kEventSynchronize = 98,
};

// Element type of a GEMM's inputs or a collective's buffer. Values are stable.
enum class DType : uint8_t {
  kUnknown = 0,
  kF64 = 1,
  kF32 = 2,
  kF16 = 3,
  kBF16 = 4,
  kF8E4M3 = 5,
  kF8E5M2 = 6,
  kI8 = 7,
  kU8 = 8,
  kI32 = 9,
  kU32 = 10,
  kI64 = 11,
  kU64 = 12,
  kTF32 = 13,  // FP32 inputs computed with TF32 tensor cores
};
constexpr uint8_t kDTypeMax = 13;

// OpRecord::flags
constexpr uint8_t kFlagTransA = 1 << 0;   // op(A) = A^T
constexpr uint8_t kFlagTransB = 1 << 1;   // op(B) = B^T
constexpr uint8_t kFlagInGroup = 1 << 2;  // member of an NCCL group (group_id set)
constexpr uint8_t kFlagAsync = 1 << 3;    // the call was stream-asynchronous

struct OpRecord {
  uint16_t version;       //   0  kRecordVersion
  uint8_t type;           //   2  RecordType::kOp
  uint8_t kind;           //   3  OpKind
  uint16_t op;            //   4  Operation
  uint8_t dtype;          //   6  DType
  uint8_t flags;          //   7  kFlag*
  int32_t device;         //   8  CUDA device ordinal; -1 (unknown) allowed for kHostSync only
  uint32_t name_id;       //  12  kernel name (kKernel), else 0
  uint64_t stream;        //  16  the cudaStream_t value the application passed
  int64_t cpu_launch_ns;  //  24  host time of the call
  int64_t gpu_start_ns;   //  32  GPU start (host clock); host time the call began for kHostSync
  int64_t duration_ns;    //  40  GPU duration; host time blocked for kHostSync
  uint64_t bytes;         //  48  bytes moved (copies, collectives: the send buffer) or set
  int64_t m;              //  56  GEMM: op(A) is m x k, op(B) k x n
  int64_t n;              //  64
  int64_t k;              //  72
  int64_t batch;          //  80  GEMM batch count (1 if not batched)
  uint64_t comm_id;       //  88  communicator id (collectives, p2p), else 0
  uint64_t seq;           //  96  per-communicator sequence number, identical on every rank
  int32_t peer;           // 104  send/recv: the peer's rank in the communicator, else -1
  int32_t root;           // 108  broadcast/reduce/gather/scatter root, else -1
  uint32_t group_id;      // 112  per-process NCCL group number (kFlagInGroup), else 0
  int32_t comm_size;      // 116  ranks in the communicator, else 0
  uint64_t count;         // 120  element count of a collective, else 0
};
static_assert(sizeof(OpRecord) == kRecordSize, "OpRecord layout is part of the ring format");
static_assert(offsetof(OpRecord, cpu_launch_ns) == 24, "OpRecord layout");
static_assert(offsetof(OpRecord, comm_id) == 88, "OpRecord layout");
static_assert(offsetof(OpRecord, count) == 120, "OpRecord layout");

constexpr size_t kNameChunk = 112;
constexpr uint8_t kNameLast = 1;

struct NameRecord {
  uint16_t version;       //   0
  uint8_t type;           //   2  RecordType::kName
  uint8_t flags;          //   3  kNameLast on the final part
  uint32_t name_id;       //   4  1, 2, ... per process
  uint16_t part;          //   8  0-based part number
  uint16_t length;        //  10  bytes used in text (<= kNameChunk)
  uint32_t reserved;      //  12
  char text[kNameChunk];  //  16  not NUL-terminated
};
static_assert(sizeof(NameRecord) == kRecordSize, "NameRecord layout is part of the ring format");

struct CommRecord {
  uint16_t version;    //   0
  uint8_t type;        //   2  RecordType::kComm
  uint8_t reserved0;   //   3
  int32_t rank;        //   4  this process's rank in the communicator
  int32_t size;        //   8  ranks in the communicator
  int32_t device;      //  12
  uint64_t comm_id;    //  16  identical on every rank (a hash of the unique id, or derived)
  uint64_t parent_id;  //  24  for split/shrink children, else 0
  int64_t created_ns;  //  32  host time
  int32_t global_rank;  // 40  this process's global rank, -1 when unknown
  uint8_t reserved[84];  // 44
};
static_assert(sizeof(CommRecord) == kRecordSize, "CommRecord layout is part of the ring format");

// NvtxRecord::event. Values are stable (they are in files).
enum class NvtxEvent : uint8_t {
  kRange = 1,  // a push/pop range, complete: start_ns (push) .. end_ns (pop), its depth
  kStart = 2,  // nvtxRangeStart: start_ns; range_id pairs it with its kEnd (any thread)
  kEnd = 3,    // nvtxRangeEnd: end_ns and range_id only
  kMark = 4,   // an instant: start_ns == end_ns
};
constexpr uint8_t kNvtxEventMax = 4;
constexpr int32_t kMaxNvtxDepth = 1024;  // a reader's bound on NvtxRecord::depth

// NvtxRecord::flags
constexpr uint8_t kNvtxHasColor = 1 << 0;    // color holds an ARGB color
constexpr uint8_t kNvtxHasPayload = 1 << 1;  // payload_type and payload are set
constexpr uint8_t kNvtxStep = 1 << 2;        // a range named XTIMER_STEP_RANGE: one training step

struct NvtxRecord {
  uint16_t version;      //   0
  uint8_t type;          //   2  RecordType::kNvtx
  uint8_t event;         //   3  NvtxEvent
  uint32_t tid;          //   4  the OS thread id (gettid) of the calling thread
  uint32_t name_id;      //   8  NVTX string id of the message (0: none)
  uint32_t domain_id;    //  12  NVTX string id of the domain's name (0: the default domain)
  int64_t start_ns;      //  16  kRange, kStart, kMark: host time of the push / start / mark
  int64_t end_ns;        //  24  kRange, kEnd, kMark: host time of the pop / end
  uint64_t range_id;     //  32  kStart, kEnd: the nvtxRangeId_t the application holds, else 0
  int32_t depth;         //  40  kRange: 0-based nesting level in its domain on its thread
  uint32_t category;     //  44  the event attributes' category (0: none)
  uint32_t color;        //  48  ARGB (kNvtxHasColor)
  uint8_t flags;         //  52  kNvtx*
  uint8_t payload_type;  //  53  NVTX_PAYLOAD_TYPE_* of nvToolsExt.h (kNvtxHasPayload)
  uint16_t reserved0;    //  54
  uint64_t payload;      //  56  the payload's 8 bytes as given (kNvtxHasPayload)
  uint8_t reserved[64];  //  64
};
static_assert(sizeof(NvtxRecord) == kRecordSize, "NvtxRecord layout is part of the ring format");
static_assert(offsetof(NvtxRecord, start_ns) == 16, "NvtxRecord layout");
static_assert(offsetof(NvtxRecord, depth) == 40, "NvtxRecord layout");
static_assert(offsetof(NvtxRecord, payload) == 56, "NvtxRecord layout");

// A slot in the ring: any of the kinds, discriminated by `type` at byte 2.
union RecordSlot {
  OpRecord op;
  NameRecord name;
  CommRecord comm;
  NvtxRecord nvtx;
  struct {
    uint16_t version;
    uint8_t type;
  } header;
};
static_assert(sizeof(RecordSlot) == kRecordSize, "RecordSlot");

const char* OpKindName(OpKind k);        // "matmul", "collective", ... ; "unknown" if invalid
const char* OperationName(Operation o);  // "GemmEx", "AllReduce", ... ; "Unknown" if invalid
const char* DTypeName(DType d);          // "fp32", "bf16", ... ; "unknown" if invalid
// The inverses of OperationName and DTypeName (names as they print, case-sensitive): kUnknown for
// a name that is not one of them.
Operation OperationFromName(const char* name);
DType DTypeFromName(const char* name);
// A communicator id as text, the one spelling that metrics labels and traces share: "0x" and 16
// lowercase hex digits ("0x00000000000000ab"). Writes into buf and returns it.
constexpr size_t kCommIdTextSize = 19;  // with the terminating NUL
const char* CommIdText(uint64_t id, char (&buf)[kCommIdTextSize]);
// Bounds a reader checks records against: device ordinals (-1, unknown, only where a record
// allows it), communicator sizes and times (host clock ns: [0, 2^62), until the year 2116, so
// that a time plus or minus another, or plus a duration, never overflows).
constexpr int32_t kMaxDevice = 4096;
constexpr int32_t kMaxCommSize = 1 << 24;
constexpr int64_t kMaxTimeNs = int64_t{1} << 62;

// The kind an operation belongs to (kMatmul for kGemmEx, ...), or 0 for an unknown operation.
// Inline over a table built from record.cc's operation list: every record read from a ring is
// validated with it.
constexpr size_t kOperationSlots = 128;  // Operation values are below this
namespace internal {
extern const std::array<uint8_t, kOperationSlots> kKindOfOperation;
}  // namespace internal
inline uint8_t KindOfOperation(uint16_t op) {
  return op < kOperationSlots ? internal::kKindOfOperation[op] : 0;
}

// The NameRecords of kernel name `name_id`: how many parts `size` bytes take (at least 1, so an
// empty name still sends its kNameLast part), and part `part` of `name` as a ring slot (the
// writer's one encoding of a name; kNameLast on the last part). `type` kNvtxString makes the
// parts of NVTX string `name_id` instead.
size_t NamePartCount(size_t size);
RecordSlot NamePart(uint32_t name_id, const std::string& name, size_t part,
                    RecordType type = RecordType::kName);

// Validates a record read from untrusted memory against the built-in kinds
// (RecordKinds::Builtin(), format/record_kinds.h). Returns nullptr when it is well formed, else a
// short reason ("unknown record version", "unknown operation", ...).
const char* Validate(const RecordSlot& slot);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_RECORD_H_

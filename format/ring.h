// The shared-memory ring between one process's libxtimer.so (single writer: its poller thread)
// and the node daemon xtimerd (single reader).
//
// Layout of the shared region (a sealed memfd, see Registration below):
//
//   [0, kHeaderSize)                  RingHeader: identity, counters, in-flight table
//   [kHeaderSize, + capacity * 128)   capacity RecordSlots (record.h), capacity a power of two
//
// Version 2 grew the header from 4096 to 12288 bytes to describe, per in-flight row, the oldest
// collective in flight (InflightDetail). A reader also accepts version 1 (4096 bytes, no
// details), so a daemon upgraded under running jobs keeps reading their rings.
//
// Protocol. The writer copies a record into slot (write_pos % capacity) and then publishes it
// with a release store of write_pos + 1. The reader loads write_pos with acquire, copies the
// slots in [read_pos, write_pos) out, validates each copy, and stores read_pos. When the ring is
// full (write_pos - read_pos == capacity) the writer drops the record and counts it in `dropped`;
// it never waits for the reader. A reader that finds write_pos - read_pos > capacity (or any other
// impossible value) treats the ring as corrupt: it skips to write_pos and counts the loss.
//
// The in-flight table is a seqlock: the writer makes `inflight_version` odd, updates the entries
// (inflight[i] and inflight_detail[i] together), then makes it even; the reader retries while the
// version is odd or changes under it.
//
// Registration. The writer creates the region with memfd_create, seals it against shrinking and
// growing (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, so a reader's mapping can never fault),
// and sends the fd with SCM_RIGHTS over the daemon's Unix stream socket, after a Hello message.
// The connection stays open: its end tells the daemon the process is gone. A writer whose daemon
// is absent keeps working and retries later; a restarted daemon receives the fd again.
#ifndef XTIMER_FORMAT_RING_H_
#define XTIMER_FORMAT_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "format/exit_state.h"
#include "format/record.h"
#include "format/record_kinds.h"

namespace xtimer {
namespace format {

constexpr uint64_t kRingMagic = 0x31474e4952545858ULL;  // "XXTRING1" little-endian
constexpr uint32_t kRingVersion = 2;
constexpr size_t kHeaderSize = 12288;
constexpr uint32_t kRingVersion1 = 1;       // still read: no in-flight details
constexpr size_t kHeaderSizeV1 = 4096;
constexpr int kMaxInflight = 64;
constexpr uint32_t kMinCapacity = 64;
constexpr uint32_t kMaxCapacity = 1u << 22;  // 512 MiB of records

// Why an op the hook intercepted was not timed: RingHeader::untimed[cause], exported by the
// daemon as xtimer_untimed_ops_total{cause}. Ops XTIMER_SAMPLE_RATE leaves out are not counted.
enum class UntimedCause : uint32_t {
  kAppError = 0,    // "app_error": the application had a CUDA error pending, so the hook made no
                    //   CUDA call of its own (it would have replaced the error)
  kNoEvent = 1,     // "no_event": the device's event pool was empty (more ops in flight than
                    //   the pool's bound, or the poller had not grown it yet)
  kCudaError = 2,   // "cuda_error": a CUDA call of the hook failed (capture query, event record,
                    //   the device's event creation)
  kQueueFull = 3,   // "queue_full": the queue from the application's threads to the poller was full
  kNoRuntime = 4,   // "no_runtime": no loaded libcudart defines the functions the hook needs
  kBudget = 5,      // "budget": the overhead budget (XTIMER_OVERHEAD_BUDGET) left the op untimed;
                    //   a collective or send/recv is still tracked to its completion
  kCount = 6,
};
constexpr int kUntimedSlots = 8;  // RingHeader::untimed has room for more causes
constexpr int kOpKindSlots = 16;  // RingHeader::op_calls / op_timed: indexed by OpKind
static_assert(kOpKindMax < kOpKindSlots, "a slot for every OpKind");
// The metric label of a cause ("app_error", ...); "unknown" for a value out of range.
const char* UntimedCauseName(uint32_t cause);

// One row of the in-flight table: a communicator, or (comm_id 0) every other kind of op.
struct InflightEntry {
  std::atomic<uint64_t> comm_id;
  std::atomic<uint64_t> last_issued_seq;     // sequence number of the last op issued
  std::atomic<uint64_t> last_completed_seq;  // ... and of the last one completed
  std::atomic<int64_t> oldest_launch_ns;     // host time of the oldest op in flight, 0 if none
};
static_assert(sizeof(InflightEntry) == 32, "InflightEntry layout");

// InflightDetail::state: what the GPU is doing about a row's oldest collective in flight. The
// values match analysis::OpState.
enum class InflightState : uint8_t {
  kNone = 0,     // no collective in flight on the row (the detail's other fields are 0)
  kStarted = 1,  // its GPU start event has fired: the GPU is in it (waiting for peers or moving data)
  kQueued = 2,   // its start event has not fired: earlier work on its stream has not finished
  kIssued = 3,   // issued and not finished; not timed (the overhead budget left it untimed), so
                 //   whether the GPU started it is not known: only its completion is tracked
};
constexpr uint8_t kInflightStateMax = 3;
// "started", "queued", "issued" (the metrics' state label); "none" for kNone.
const char* InflightStateName(InflightState state);

// The second half of an in-flight row (version 2): its device, and the oldest collective in
// flight on it with, when queued, the oldest unfinished op on its stream (the "blocker").
struct InflightDetail {
  std::atomic<int32_t> device;          //   0  CUDA device ordinal of the row, -1 when unknown
  std::atomic<uint8_t> state;           //   4  InflightState
  std::atomic<uint8_t> dtype;           //   5  DType of the collective
  std::atomic<uint16_t> op;             //   6  Operation (a collective)
  std::atomic<uint64_t> seq;            //   8  its per-communicator sequence number
  std::atomic<uint64_t> count;          //  16  elements
  std::atomic<uint64_t> bytes;          //  24  send buffer bytes
  std::atomic<int32_t> root;            //  32  -1 when the op has none
  std::atomic<int32_t> comm_size;       //  36
  std::atomic<int64_t> launch_ns;       //  40  host time of the call
  std::atomic<int64_t> gpu_start_ns;    //  48  started: GPU start on the host clock, else 0
  std::atomic<uint16_t> blocker_op;     //  56  Operation; 0: no blocker known
  std::atomic<uint8_t> blocker_kind;    //  58  OpKind
  std::atomic<uint8_t> reserved0;       //  59
  std::atomic<uint32_t> blocker_name_id;  // 60  kernel name (kKernel), else 0
  std::atomic<int64_t> blocker_m;       //  64  GEMM shape, else 0
  std::atomic<int64_t> blocker_n;       //  72
  std::atomic<int64_t> blocker_k;       //  80
  std::atomic<uint64_t> blocker_bytes;  //  88  copies, sets, collectives, p2p
  std::atomic<int64_t> blocker_launch_ns;  // 96  host time of its call
  std::atomic<uint64_t> blocker_comm_id;   // 104  a collective or p2p blocker's communicator
  std::atomic<uint64_t> blocker_seq;       // 112  ... and its sequence number
  std::atomic<uint64_t> reserved1;         // 120
};
static_assert(sizeof(InflightDetail) == 128, "InflightDetail layout");
static_assert(offsetof(InflightDetail, seq) == 8, "InflightDetail layout");
static_assert(offsetof(InflightDetail, blocker_op) == 56, "InflightDetail layout");
static_assert(offsetof(InflightDetail, blocker_m) == 64, "InflightDetail layout");
static_assert(offsetof(InflightDetail, blocker_seq) == 112, "InflightDetail layout");
static_assert(std::atomic<uint8_t>::is_always_lock_free &&
                  std::atomic<uint16_t>::is_always_lock_free,
              "shared atomics must be lock-free");

struct RingHeader {
  uint64_t magic;                    //    0  kRingMagic
  uint32_t version;                  //    8  kRingVersion
  uint32_t header_size;              //   12  kHeaderSize
  uint32_t record_size;              //   16  kRecordSize
  uint32_t capacity;                 //   20  slots, a power of two
  int32_t pid;                       //   24
  uint32_t op_log;                   //   28  XTIMER_LOG: OpLogRequest (0 in older writers)
  int64_t start_ns;                  //   32  CLOCK_REALTIME at creation
  char job[64];                      //   40  NUL-terminated
  char host[64];                     //  104
  char pod[64];                      //  168
  std::atomic<int32_t> rank;         //  232  -1 until known (may be learned from NCCL)
  std::atomic<int32_t> local_rank;   //  236
  std::atomic<int32_t> world_size;   //  240
  uint32_t reserved1;                //  244
  std::atomic<int64_t> heartbeat_ns;  // 248  CLOCK_REALTIME, updated by the writer's poller
  alignas(64) std::atomic<uint64_t> write_pos;  // 256  records published
  std::atomic<uint64_t> dropped;                // 264  records dropped because the ring was full
  std::atomic<uint64_t> exit_state;             // 272  how the writer is ending (ExitState below)
  alignas(64) std::atomic<uint64_t> read_pos;   // 320  written by the reader only
  alignas(64) std::atomic<uint32_t> inflight_version;  // 384  seqlock
  std::atomic<uint32_t> inflight_count;                // 388  valid entries
  InflightEntry inflight[kMaxInflight];                // 392
  char reserved2[3072 - 2440];                         // 2440
  std::atomic<uint64_t> untimed[kUntimedSlots];        // 3072  by UntimedCause, written by the poller
  // The hook's own host time on the application's threads (ns, cumulative; 0 from older hooks,
  // whose bytes here were reserved): the work around each timed op, its CUDA calls included, and
  // the NVTX and Python tracing callbacks (docs/metrics.md).
  std::atomic<uint64_t> hook_own_ns;                   // 3136  written by the poller
  // Ops the hook considered timing (every call it intercepts that would be timed at 100%), and
  // those it timed, by OpKind (index = the kind's value; 0 and values past kOpKindMax unused);
  // cumulative, 0 from older hooks. Written by the poller.
  std::atomic<uint64_t> op_calls[kOpKindSlots];        // 3144
  std::atomic<uint64_t> op_timed[kOpKindSlots];        // 3272
  // XTIMER_OVERHEAD_BUDGET in parts per million of an application thread's time (0: an older
  // hook, which timed every op).
  std::atomic<uint32_t> budget_ppm;                    // 3400
  uint32_t reserved4;                                  // 3404
  // Collectives and send/recv left untimed and tracked to their completion, by how the hook
  // learned it: its own completion mark (a CUDA event), or NCCL's report (its profiler plugin
  // interface, hook/nccl_profiler.h). Cumulative, 0 from older hooks. Written by the poller.
  std::atomic<uint64_t> tracked_by_mark;               // 3408
  std::atomic<uint64_t> tracked_by_nccl;               // 3416
  char reserved3[4096 - 3424];                         // 3424
  InflightDetail inflight_detail[kMaxInflight];        // 4096  version 2: row i's detail
};
static_assert(sizeof(RingHeader) == kHeaderSize, "RingHeader fills its pages");
static_assert(offsetof(RingHeader, write_pos) == 256, "RingHeader layout");
static_assert(offsetof(RingHeader, exit_state) == 272, "RingHeader layout");
static_assert(offsetof(RingHeader, read_pos) == 320, "RingHeader layout");
static_assert(offsetof(RingHeader, inflight) == 392, "RingHeader layout");
static_assert(offsetof(RingHeader, untimed) == 3072, "RingHeader layout");
static_assert(offsetof(RingHeader, hook_own_ns) == 3136, "RingHeader layout");
static_assert(offsetof(RingHeader, op_calls) == 3144, "RingHeader layout");
static_assert(offsetof(RingHeader, op_timed) == 3272, "RingHeader layout");
static_assert(offsetof(RingHeader, tracked_by_mark) == 3408, "RingHeader layout");
static_assert(offsetof(RingHeader, budget_ppm) == 3400, "RingHeader layout");
static_assert(offsetof(RingHeader, inflight_detail) == kHeaderSizeV1, "RingHeader layout");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

// exit_state: how the writer's process is ending (format/exit_state.h).

// RingHeader::op_log: the per-rank operation log the process asks the daemon to write
// (XTIMER_LOG, docs/oplog.md). It was padding: older writers leave it 0. A reader maps any other
// value to kNone.
enum class OpLogRequest : uint32_t { kNone = 0, kJsonl = 1, kCsv = 2 };

struct Identity {
  std::string job;
  std::string host;
  std::string pod;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  OpLogRequest op_log = OpLogRequest::kNone;  // fixed at creation
};

// Plain copies of an in-flight row's detail (see InflightDetail for the fields).
struct InflightBlocker {
  uint16_t op = 0;  // 0: none known
  uint8_t kind = 0;
  uint32_t name_id = 0;
  int64_t m = 0, n = 0, k = 0;
  uint64_t bytes = 0;
  int64_t launch_ns = 0;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
};

struct InflightCollective {
  InflightState state = InflightState::kNone;
  uint16_t op = 0;
  uint8_t dtype = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  int32_t root = -1;
  int32_t comm_size = 0;
  int64_t launch_ns = 0;
  int64_t gpu_start_ns = 0;  // kStarted only
  InflightBlocker blocker;   // kQueued only
};

// What a queued collective waits behind on its stream, the one classification of the daemon's
// verdicts, its metrics and the rules: "communication" (a collective or a send/receive: its rank
// waits on other ranks, a victim), "work" (its own kernels, GEMMs, copies), "unknown" (no blocker
// known); "none" when it is not queued.
const char* BlockedByClass(const InflightCollective& c);
bool QueuedBehindCommunication(const InflightCollective& c);

// A plain copy of one in-flight row.
struct InflightRow {
  uint64_t comm_id = 0;
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  int64_t oldest_launch_ns = 0;
  int32_t device = -1;              // version 2; -1 from a version 1 ring
  InflightCollective oldest;        // version 2; state kNone from a version 1 ring
};

// Checks an in-flight row copied from untrusted memory. Returns nullptr when it is well formed,
// else a short reason ("bad state", "op 12 is not a collective", ...).
const char* ValidateInflightRow(const InflightRow& row);

size_t RegionSize(uint32_t capacity, size_t header_size = kHeaderSize);

// The writer side. Write() allocates nothing, takes no lock and makes no system call.
class RingWriter {
 public:
  // Creates and seals the region. `capacity` is rounded up to a power of two within
  // [kMinCapacity, kMaxCapacity]. Returns nullopt (with *error) when memfd/mmap fail.
  static std::optional<RingWriter> Create(uint32_t capacity, const Identity& identity,
                                          std::string* error);
  RingWriter(RingWriter&& other) noexcept;
  RingWriter& operator=(RingWriter&& other) noexcept;
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;
  ~RingWriter();

  // Appends a record; false when the ring is full (the record is dropped and counted).
  bool Write(const RecordSlot& record);
  void Heartbeat(int64_t now_ns);
  // Replaces the in-flight table (at most kMaxInflight rows are kept).
  void PublishInflight(const InflightRow* rows, int count);
  void SetRank(int rank, int local_rank, int world_size);
  // Publishes the process's untimed-op counters (cumulative, by UntimedCause).
  void PublishUntimed(const uint64_t* counts, int n);
  // Publishes the hook's own host time on application threads (ns, cumulative).
  void PublishHookOwnNs(uint64_t ns);
  // Publishes the ops considered and timed by kind (cumulative, kOpKindSlots each) and the
  // overhead budget.
  void PublishTimingRates(const uint64_t* calls, const uint64_t* timed, uint32_t budget_ppm);
  // Publishes the untimed collectives tracked to completion by a mark and by NCCL's report.
  void PublishTracked(uint64_t by_mark, uint64_t by_nccl);

  int fd() const { return fd_; }
  RingHeader* header() const { return header_; }

 private:
  RingWriter(int fd, void* base, size_t size);
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  RingHeader* header_ = nullptr;
  RecordSlot* slots_ = nullptr;
  uint64_t mask_ = 0;
};

struct ReadStats {
  uint64_t records = 0;  // valid records returned
  uint64_t invalid = 0;  // records that failed Validate (skipped)
  uint64_t lost = 0;     // records skipped because the positions were impossible
};

// The reader side. Treats the region as hostile: every value is checked before it is used.
class RingReader {
 public:
  // Maps a region received from a writer. Fails (with *error) unless the fd is a memfd sealed
  // against shrinking, its size matches the header, and the header is one we understand.
  static std::optional<RingReader> Attach(int fd, std::string* error);
  RingReader(RingReader&& other) noexcept;
  RingReader& operator=(RingReader&& other) noexcept;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  // Copies up to `max` valid records into `out`; returns how many. Never blocks. A record is
  // valid when the reader's kinds (RecordKinds::Builtin() unless set_kinds) accept it.
  size_t Read(RecordSlot* out, size_t max, ReadStats* stats);
  // The kinds Read accepts (format/record_kinds.h); `kinds` must outlive the reader.
  void set_kinds(const RecordKinds* kinds) { kinds_ = kinds; }

  // Identity as the header says now (strings are cut at their NUL or at 63 bytes).
  Identity identity() const;
  int pid() const { return pid_; }
  int64_t start_ns() const { return start_ns_; }
  uint32_t capacity() const { return capacity_; }
  uint64_t written() const;
  uint64_t dropped() const;
  // The writer's cumulative count of untimed ops for `cause` (0 for a cause out of range).
  uint64_t untimed(UntimedCause cause) const;
  // The writer's own host time on application threads (ns, cumulative; 0 from older hooks).
  uint64_t hook_own_ns() const;
  // The writer's ops considered / timed of OpKind `kind` (cumulative; 0 out of range or from
  // older hooks), and its overhead budget in ppm (0 from older hooks).
  uint64_t op_calls(uint8_t kind) const;
  uint64_t op_timed(uint8_t kind) const;
  uint32_t budget_ppm() const;
  uint64_t tracked_by_mark() const;
  uint64_t tracked_by_nccl() const;
  int64_t heartbeat_ns() const;
  // The writer's exit marker (validated; kNone when absent or malformed).
  ExitState exit_state() const;
  // Records published but not read yet (0..capacity).
  uint64_t backlog() const;
  // A consistent copy of the in-flight table; false if the writer kept it busy. A row whose
  // detail fails ValidateInflightRow keeps its counters but loses its detail (state kNone,
  // device -1), counted in *invalid_details when given.
  bool Inflight(InflightRow* rows, int* count, uint64_t* invalid_details = nullptr) const;
  uint32_t version() const { return version_; }
  // Drops this process's page-table entries for the region (madvise MADV_DONTNEED: the shared
  // data stays, later reads fault it back in), so the pages read so far leave the reader's RSS.
  void ReleasePages();

 private:
  RingReader(int fd, void* base, size_t size, uint32_t version, size_t header_size);
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  RingHeader* header_ = nullptr;
  const RecordKinds* kinds_ = &RecordKinds::Builtin();
  const RecordSlot* slots_ = nullptr;
  uint32_t capacity_ = 0;
  uint32_t version_ = 0;
  int pid_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_RING_H_

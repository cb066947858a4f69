// The shared-memory ring between one process's libxtimer.so (single writer: its poller thread)
// and the node daemon xtimerd (single reader).
//
// Layout of the shared region (a sealed memfd, see Registration below):
//
//   [0, kHeaderSize)                  RingHeader: identity, counters, in-flight table
//   [kHeaderSize, + capacity * 128)   capacity RecordSlots (record.h), capacity a power of two
//
// Protocol. The writer copies a record into slot (write_pos % capacity) and then publishes it
// with a release store of write_pos + 1. The reader loads write_pos with acquire, copies the
// slots in [read_pos, write_pos) out, validates each copy, and stores read_pos. When the ring is
// full (write_pos - read_pos == capacity) the writer drops the record and counts it in `dropped`;
// it never waits for the reader. A reader that finds write_pos - read_pos > capacity (or any other
// impossible value) treats the ring as corrupt: it skips to write_pos and counts the loss.
//
// The in-flight table is a seqlock: the writer makes `inflight_version` odd, updates the entries,
// then makes it even; the reader retries while the version is odd or changes under it.
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

#include "format/record.h"

namespace xtimer {
namespace format {

constexpr uint64_t kRingMagic = 0x31474e4952545858ULL;  // "XXTRING1" little-endian
constexpr uint32_t kRingVersion = 1;
constexpr size_t kHeaderSize = 4096;
constexpr int kMaxInflight = 64;
constexpr uint32_t kMinCapacity = 64;
constexpr uint32_t kMaxCapacity = 1u << 22;  // 512 MiB of records

// Why an op the hook intercepted was not timed: RingHeader::untimed[cause], exported by the
// daemon as xtimer_untimed_ops_total{cause}. Sampled-out ops (XTIMER_SAMPLE_RATE) are not counted.
enum class UntimedCause : uint32_t {
  kAppError = 0,    // "app_error": the application had a CUDA error pending, so the hook made no
                    //   CUDA call of its own (it would have replaced the error)
  kNoEvent = 1,     // "no_event": the device's event pool was empty (more ops in flight than
                    //   the pool's bound, or the poller had not grown it yet)
  kCudaError = 2,   // "cuda_error": a CUDA call of the hook failed (capture query, event record,
                    //   the device's event creation)
  kQueueFull = 3,   // "queue_full": the queue from the application's threads to the poller was full
  kNoRuntime = 4,   // "no_runtime": no loaded libcudart defines the functions the hook needs
  kCount = 5,
};
constexpr int kUntimedSlots = 8;  // RingHeader::untimed has room for more causes
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

struct RingHeader {
  uint64_t magic;                    //    0  kRingMagic
  uint32_t version;                  //    8  kRingVersion
  uint32_t header_size;              //   12  kHeaderSize
  uint32_t record_size;              //   16  kRecordSize
  uint32_t capacity;                 //   20  slots, a power of two
  int32_t pid;                       //   24
  uint32_t reserved0;                //   28
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
};
static_assert(sizeof(RingHeader) <= kHeaderSize, "RingHeader must fit its page");
static_assert(offsetof(RingHeader, write_pos) == 256, "RingHeader layout");
static_assert(offsetof(RingHeader, exit_state) == 272, "RingHeader layout");
static_assert(offsetof(RingHeader, read_pos) == 320, "RingHeader layout");
static_assert(offsetof(RingHeader, inflight) == 392, "RingHeader layout");
static_assert(offsetof(RingHeader, untimed) == 3072, "RingHeader layout");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

// exit_state: how the writer's process is ending, written with one atomic store (the signal
// handler's is its only access to the ring) just before the process ends, read by the daemon
// when the registration connection closes. High 32 bits the kind, low 32 bits its value:
//   0                          running, or gone without saying (killed, _exit): "connection lost"
//   (1 << 32) | (status & 255) exit(status) / return from main was called
//   (2 << 32) | signal         a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) is being
//                              delivered; a handler of the application that returns clears it
// Older writers leave the field 0 (it was padding).
enum class ExitKind : uint32_t { kNone = 0, kExited = 1, kSignal = 2 };
constexpr uint64_t EncodeExitState(ExitKind kind, uint32_t value) {
  return (uint64_t{static_cast<uint32_t>(kind)} << 32) | value;
}

struct ExitState {
  ExitKind kind = ExitKind::kNone;
  int value = 0;  // exit status 0..255, or signal number 1..64
};

// Decodes an untrusted exit_state word; anything outside the forms above is kNone.
ExitState DecodeExitState(uint64_t word);

struct Identity {
  std::string job;
  std::string host;
  std::string pod;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
};

// A plain copy of one in-flight row.
struct InflightRow {
  uint64_t comm_id = 0;
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  int64_t oldest_launch_ns = 0;
};

size_t RegionSize(uint32_t capacity);

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

  // Copies up to `max` valid records into `out`; returns how many. Never blocks.
  size_t Read(RecordSlot* out, size_t max, ReadStats* stats);

  // Identity as the header says now (strings are cut at their NUL or at 63 bytes).
  Identity identity() const;
  int pid() const { return pid_; }
  int64_t start_ns() const { return start_ns_; }
  uint32_t capacity() const { return capacity_; }
  uint64_t written() const;
  uint64_t dropped() const;
  // The writer's cumulative count of untimed ops for `cause` (0 for a cause out of range).
  uint64_t untimed(UntimedCause cause) const;
  int64_t heartbeat_ns() const;
  // The writer's exit marker (validated; kNone when absent or malformed).
  ExitState exit_state() const;
  // Records published but not read yet (0..capacity).
  uint64_t backlog() const;
  // A consistent copy of the in-flight table; false if the writer kept it busy.
  bool Inflight(InflightRow* rows, int* count) const;
  // Drops this process's page-table entries for the region (madvise MADV_DONTNEED: the shared
  // data stays, later reads fault it back in), so the pages read so far leave the reader's RSS.
  void ReleasePages();

 private:
  RingReader(int fd, void* base, size_t size);
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  RingHeader* header_ = nullptr;
  const RecordSlot* slots_ = nullptr;
  uint32_t capacity_ = 0;
  int pid_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_RING_H_

#include "format/ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/clock.h"

namespace xtimer {
namespace format {
namespace {

uint32_t RoundCapacity(uint32_t capacity) {
  uint32_t c = kMinCapacity;
  while (c < capacity && c < kMaxCapacity) c <<= 1;
  return c;
}

void CopyField(char (&dst)[64], const std::string& src) {
  size_t n = src.size() < sizeof(dst) - 1 ? src.size() : sizeof(dst) - 1;
  memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

std::string ReadField(const char (&src)[64]) {
  size_t n = 0;
  while (n < sizeof(src) - 1 && src[n] != '\0') ++n;
  return std::string(src, n);
}

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

}  // namespace

size_t RegionSize(uint32_t capacity, size_t header_size) {
  return header_size + size_t{capacity} * kRecordSize;
}

const char* InflightStateName(InflightState state) {
  switch (state) {
    case InflightState::kStarted: return "started";
    case InflightState::kQueued: return "queued";
    case InflightState::kIssued: return "issued";
    case InflightState::kNone: break;
  }
  return "none";
}

const char* ValidateInflightRow(const InflightRow& row) {
  if (row.device < -1 || row.device > kMaxDevice) return "bad device";
  const InflightCollective& c = row.oldest;
  if (static_cast<uint8_t>(c.state) > kInflightStateMax) return "bad state";
  if (c.state == InflightState::kNone) return nullptr;
  if (KindOfOperation(c.op) != static_cast<uint8_t>(OpKind::kCollective)) {
    return "op is not a collective";
  }
  if (c.dtype > kDTypeMax) return "bad dtype";
  if (c.comm_size < 0 || c.root < -1 || (c.comm_size > 0 && c.root >= c.comm_size)) {
    return "bad root or communicator size";
  }
  if (c.launch_ns < 0 || c.gpu_start_ns < 0) return "negative time";
  if (c.state != InflightState::kStarted && c.gpu_start_ns != 0) {
    return "a GPU start time for a collective that did not start";
  }
  // A communicator's collectives run one after another, so one at or below the row's completed
  // sequence number cannot be in flight: a stale detail (once seen under load, a collective shown
  // started for 11 s while 1,000 later ones had completed) must not make a hang verdict.
  if (row.comm_id != 0 && c.seq != 0 && c.seq <= row.last_completed_seq) {
    return "a collective in flight at or below the completed sequence number";
  }
  const InflightBlocker& b = c.blocker;
  if (b.op == 0) return nullptr;
  if (c.state != InflightState::kQueued) return "a blocker for a collective that started";  // or untimed
  if (b.kind == 0 || KindOfOperation(b.op) != b.kind) return "blocker op and kind disagree";
  if (b.m < 0 || b.n < 0 || b.k < 0 || b.launch_ns < 0) return "negative blocker field";
  return nullptr;
}

// ------------------------------------------------------------------------------------- writer

RingWriter::RingWriter(int fd, void* base, size_t size)
    : fd_(fd),
      base_(base),
      size_(size),
      header_(static_cast<RingHeader*>(base)),
      slots_(reinterpret_cast<RecordSlot*>(static_cast<char*>(base) + kHeaderSize)),
      mask_(header_->capacity - 1) {}

std::optional<RingWriter> RingWriter::Create(uint32_t capacity, const Identity& identity,
                                             std::string* error) {
  capacity = RoundCapacity(capacity);
  const size_t size = RegionSize(capacity);
  int fd = memfd_create("xtimer-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *error = Errno("memfd_create");
    return std::nullopt;
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    *error = Errno("ftruncate");
    close(fd);
    return std::nullopt;
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *error = Errno("F_ADD_SEALS");
    close(fd);
    return std::nullopt;
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = Errno("mmap");
    close(fd);
    return std::nullopt;
  }
  auto* h = static_cast<RingHeader*>(base);  // the fresh region is zero-filled
  h->version = kRingVersion;
  h->header_size = kHeaderSize;
  h->record_size = kRecordSize;
  h->capacity = capacity;
  h->pid = getpid();
  h->start_ns = RealtimeNs();
  h->op_log = static_cast<uint32_t>(identity.op_log);
  CopyField(h->job, identity.job);
  CopyField(h->host, identity.host);
  CopyField(h->pod, identity.pod);
  h->rank.store(identity.rank, std::memory_order_relaxed);
  h->local_rank.store(identity.local_rank, std::memory_order_relaxed);
  h->world_size.store(identity.world_size, std::memory_order_relaxed);
  h->heartbeat_ns.store(h->start_ns, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kRingMagic;  // last: a reader never sees a half-initialised header as valid
  return RingWriter(fd, base, size);
}

RingWriter::RingWriter(RingWriter&& o) noexcept { *this = std::move(o); }

RingWriter& RingWriter::operator=(RingWriter&& o) noexcept {
  if (this != &o) {
    this->~RingWriter();
    fd_ = std::exchange(o.fd_, -1);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    header_ = std::exchange(o.header_, nullptr);
    slots_ = std::exchange(o.slots_, nullptr);
    mask_ = o.mask_;
  }
  return *this;
}

RingWriter::~RingWriter() {
  if (base_ != nullptr) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

bool RingWriter::Write(const RecordSlot& record) {
  const uint64_t w = header_->write_pos.load(std::memory_order_relaxed);
  const uint64_t r = header_->read_pos.load(std::memory_order_acquire);
  // The reader is untrusted too: a read_pos ahead of write_pos counts as full.
  if (w - r >= header_->capacity || r > w) {
    header_->dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  slots_[w & mask_] = record;
  header_->write_pos.store(w + 1, std::memory_order_release);
  return true;
}

void RingWriter::PublishUntimed(const uint64_t* counts, int n) {
  for (int i = 0; i < n && i < kUntimedSlots; ++i) {
    header_->untimed[i].store(counts[i], std::memory_order_relaxed);
  }
}

void RingWriter::PublishHookOwnNs(uint64_t ns) {
  header_->hook_own_ns.store(ns, std::memory_order_relaxed);
}

void RingWriter::PublishTimingRates(const uint64_t* calls, const uint64_t* timed,
                                    uint32_t budget_ppm) {
  for (int i = 0; i < kOpKindSlots; ++i) {
    header_->op_calls[i].store(calls[i], std::memory_order_relaxed);
    header_->op_timed[i].store(timed[i], std::memory_order_relaxed);
  }
  header_->budget_ppm.store(budget_ppm, std::memory_order_relaxed);
}

void RingWriter::PublishTracked(uint64_t by_mark, uint64_t by_nccl) {
  header_->tracked_by_mark.store(by_mark, std::memory_order_relaxed);
  header_->tracked_by_nccl.store(by_nccl, std::memory_order_relaxed);
}

void RingWriter::Heartbeat(int64_t now_ns) {
  header_->heartbeat_ns.store(now_ns, std::memory_order_relaxed);
}

namespace {

void StoreDetail(const InflightRow& row, InflightDetail* d) {
  constexpr auto kR = std::memory_order_relaxed;
  const InflightCollective& c = row.oldest;
  const InflightBlocker& b = c.blocker;
  d->device.store(row.device, kR);
  d->state.store(static_cast<uint8_t>(c.state), kR);
  d->dtype.store(c.dtype, kR);
  d->op.store(c.op, kR);
  d->seq.store(c.seq, kR);
  d->count.store(c.count, kR);
  d->bytes.store(c.bytes, kR);
  d->root.store(c.root, kR);
  d->comm_size.store(c.comm_size, kR);
  d->launch_ns.store(c.launch_ns, kR);
  d->gpu_start_ns.store(c.gpu_start_ns, kR);
  d->blocker_op.store(b.op, kR);
  d->blocker_kind.store(b.kind, kR);
  d->blocker_name_id.store(b.name_id, kR);
  d->blocker_m.store(b.m, kR);
  d->blocker_n.store(b.n, kR);
  d->blocker_k.store(b.k, kR);
  d->blocker_bytes.store(b.bytes, kR);
  d->blocker_launch_ns.store(b.launch_ns, kR);
  d->blocker_comm_id.store(b.comm_id, kR);
  d->blocker_seq.store(b.seq, kR);
}

void LoadDetail(const InflightDetail& d, InflightRow* row) {
  constexpr auto kR = std::memory_order_relaxed;
  InflightCollective& c = row->oldest;
  InflightBlocker& b = c.blocker;
  row->device = d.device.load(kR);
  c.state = static_cast<InflightState>(d.state.load(kR));
  c.dtype = d.dtype.load(kR);
  c.op = d.op.load(kR);
  c.seq = d.seq.load(kR);
  c.count = d.count.load(kR);
  c.bytes = d.bytes.load(kR);
  c.root = d.root.load(kR);
  c.comm_size = d.comm_size.load(kR);
  c.launch_ns = d.launch_ns.load(kR);
  c.gpu_start_ns = d.gpu_start_ns.load(kR);
  b.op = d.blocker_op.load(kR);
  b.kind = d.blocker_kind.load(kR);
  b.name_id = d.blocker_name_id.load(kR);
  b.m = d.blocker_m.load(kR);
  b.n = d.blocker_n.load(kR);
  b.k = d.blocker_k.load(kR);
  b.bytes = d.blocker_bytes.load(kR);
  b.launch_ns = d.blocker_launch_ns.load(kR);
  b.comm_id = d.blocker_comm_id.load(kR);
  b.seq = d.blocker_seq.load(kR);
}

}  // namespace

void RingWriter::PublishInflight(const InflightRow* rows, int count) {
  if (count > kMaxInflight) count = kMaxInflight;
  if (count < 0) count = 0;
  uint32_t v = header_->inflight_version.load(std::memory_order_relaxed);
  header_->inflight_version.store(v + 1, std::memory_order_relaxed);  // odd: writing
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < count; ++i) {
    InflightEntry& e = header_->inflight[i];
    e.comm_id.store(rows[i].comm_id, std::memory_order_relaxed);
    e.last_issued_seq.store(rows[i].last_issued_seq, std::memory_order_relaxed);
    e.last_completed_seq.store(rows[i].last_completed_seq, std::memory_order_relaxed);
    e.oldest_launch_ns.store(rows[i].oldest_launch_ns, std::memory_order_relaxed);
    StoreDetail(rows[i], &header_->inflight_detail[i]);
  }
  header_->inflight_count.store(static_cast<uint32_t>(count), std::memory_order_relaxed);
  header_->inflight_version.store(v + 2, std::memory_order_release);  // even: stable
}

void RingWriter::SetRank(int rank, int local_rank, int world_size) {
  header_->rank.store(rank, std::memory_order_relaxed);
  header_->local_rank.store(local_rank, std::memory_order_relaxed);
  header_->world_size.store(world_size, std::memory_order_relaxed);
}

// ------------------------------------------------------------------------------------- reader

RingReader::RingReader(int fd, void* base, size_t size, uint32_t version, size_t header_size)
    : fd_(fd),
      base_(base),
      size_(size),
      header_(static_cast<RingHeader*>(base)),
      slots_(reinterpret_cast<const RecordSlot*>(static_cast<char*>(base) + header_size)),
      version_(version) {
  // Fixed at attach: a writer that rewrites them later cannot move the reader out of bounds.
  capacity_ = header_->capacity;
  pid_ = header_->pid;
  start_ns_ = header_->start_ns;
}

std::optional<RingReader> RingReader::Attach(int fd, std::string* error) {
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    *error = Errno("F_GET_SEALS (not a memfd?)");
    return std::nullopt;
  }
  if ((seals & F_SEAL_SHRINK) == 0) {
    *error = "the ring is not sealed against shrinking";
    return std::nullopt;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = Errno("fstat");
    return std::nullopt;
  }
  if (st.st_size < static_cast<off_t>(kHeaderSizeV1)) {
    *error = "the ring is smaller than its header";
    return std::nullopt;
  }
  struct {  // the plain prefix of RingHeader (offsets 0..31)
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint32_t record_size;
    uint32_t capacity;
    int32_t pid;
    uint32_t reserved0;
  } h;
  static_assert(sizeof(h) == offsetof(RingHeader, start_ns), "prefix of RingHeader");
  if (pread(fd, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h))) {
    *error = Errno("reading the ring header");
    return std::nullopt;
  }
  if (h.magic != kRingMagic) {
    *error = "bad ring magic";
    return std::nullopt;
  }
  const bool v2 = h.version == kRingVersion && h.header_size == kHeaderSize;
  const bool v1 = h.version == kRingVersion1 && h.header_size == kHeaderSizeV1;
  if (!(v1 || v2) || h.record_size != kRecordSize) {
    *error = "unsupported ring version or layout (this daemon reads ring versions 1 and 2)";
    return std::nullopt;
  }
  if (h.capacity < kMinCapacity || h.capacity > kMaxCapacity ||
      (h.capacity & (h.capacity - 1)) != 0) {
    *error = "ring capacity is not a power of two in range";
    return std::nullopt;
  }
  if (st.st_size != static_cast<off_t>(RegionSize(h.capacity, h.header_size))) {
    *error = "ring size does not match its capacity";
    return std::nullopt;
  }
  const size_t size = RegionSize(h.capacity, h.header_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = Errno("mmap");
    return std::nullopt;
  }
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    *error = Errno("dup");
    munmap(base, size);
    return std::nullopt;
  }
  RingReader reader(own, base, size, h.version, h.header_size);
  if (reader.capacity_ != h.capacity) {  // rewritten between the check and the mapping
    *error = "ring header changed while attaching";
    return std::nullopt;
  }
  return reader;
}

RingReader::RingReader(RingReader&& o) noexcept { *this = std::move(o); }

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    this->~RingReader();
    fd_ = std::exchange(o.fd_, -1);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    header_ = std::exchange(o.header_, nullptr);
    slots_ = std::exchange(o.slots_, nullptr);
    capacity_ = o.capacity_;
    version_ = o.version_;
    pid_ = o.pid_;
    start_ns_ = o.start_ns_;
    kinds_ = o.kinds_;
  }
  return *this;
}

RingReader::~RingReader() {
  if (base_ != nullptr) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

size_t RingReader::Read(RecordSlot* out, size_t max, ReadStats* stats) {
  uint64_t r = header_->read_pos.load(std::memory_order_relaxed);
  const uint64_t w = header_->write_pos.load(std::memory_order_acquire);
  if (w < r || w - r > capacity_) {
    // Impossible positions: resynchronise at the writer's position.
    stats->lost += (w > r) ? w - r : 0;
    header_->read_pos.store(w, std::memory_order_release);
    return 0;
  }
  const uint64_t mask = capacity_ - 1;
  size_t n = 0;
  while (r < w && n < max) {
    // The records a reader falls behind on are cold: ask for the ones after this early.
    __builtin_prefetch(&slots_[(r + 16) & mask]);
    __builtin_prefetch(reinterpret_cast<const char*>(&slots_[(r + 16) & mask]) + 64);
    out[n] = slots_[r & mask];  // copy first: the writer may change the slot under us
    ++r;
    if (kinds_->Validate(out[n]) != nullptr) {
      ++stats->invalid;
      continue;
    }
    ++n;
  }
  stats->records += n;
  header_->read_pos.store(r, std::memory_order_release);
  return n;
}

Identity RingReader::identity() const {
  Identity id;
  id.job = ReadField(header_->job);
  id.host = ReadField(header_->host);
  id.pod = ReadField(header_->pod);
  id.rank = header_->rank.load(std::memory_order_relaxed);
  id.local_rank = header_->local_rank.load(std::memory_order_relaxed);
  id.world_size = header_->world_size.load(std::memory_order_relaxed);
  const uint32_t op_log = header_->op_log;  // untrusted: only the known values
  if (op_log == static_cast<uint32_t>(OpLogRequest::kJsonl) ||
      op_log == static_cast<uint32_t>(OpLogRequest::kCsv)) {
    id.op_log = static_cast<OpLogRequest>(op_log);
  }
  return id;
}

uint64_t RingReader::written() const {
  return header_->write_pos.load(std::memory_order_relaxed);
}

uint64_t RingReader::dropped() const { return header_->dropped.load(std::memory_order_relaxed); }

uint64_t RingReader::hook_own_ns() const {
  return header_->hook_own_ns.load(std::memory_order_relaxed);
}

uint64_t RingReader::op_calls(uint8_t kind) const {
  return kind < kOpKindSlots ? header_->op_calls[kind].load(std::memory_order_relaxed) : 0;
}

uint64_t RingReader::op_timed(uint8_t kind) const {
  return kind < kOpKindSlots ? header_->op_timed[kind].load(std::memory_order_relaxed) : 0;
}

uint64_t RingReader::tracked_by_mark() const {
  return header_->tracked_by_mark.load(std::memory_order_relaxed);
}

uint64_t RingReader::tracked_by_nccl() const {
  return header_->tracked_by_nccl.load(std::memory_order_relaxed);
}

uint32_t RingReader::budget_ppm() const {
  return header_->budget_ppm.load(std::memory_order_relaxed);
}

uint64_t RingReader::untimed(UntimedCause cause) const {
  auto i = static_cast<uint32_t>(cause);
  return i < static_cast<uint32_t>(kUntimedSlots)
             ? header_->untimed[i].load(std::memory_order_relaxed)
             : 0;
}

const char* UntimedCauseName(uint32_t cause) {
  static constexpr const char* kNames[] = {"app_error", "no_event", "cuda_error", "queue_full",
                                           "no_runtime", "budget"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(UntimedCause::kCount),
                "a name for every UntimedCause");
  return cause < static_cast<uint32_t>(UntimedCause::kCount) ? kNames[cause] : "unknown";
}

int64_t RingReader::heartbeat_ns() const {
  return header_->heartbeat_ns.load(std::memory_order_relaxed);
}

ExitState RingReader::exit_state() const {
  return DecodeExitState(header_->exit_state.load(std::memory_order_acquire));
}

uint64_t RingReader::backlog() const {
  uint64_t w = header_->write_pos.load(std::memory_order_relaxed);
  uint64_t r = header_->read_pos.load(std::memory_order_relaxed);
  return (w >= r && w - r <= capacity_) ? w - r : 0;
}

void RingReader::ReleasePages() {
  if (base_ != nullptr) madvise(base_, size_, MADV_DONTNEED);
}

bool RingReader::Inflight(InflightRow* rows, int* count, uint64_t* invalid_details) const {
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint32_t v1 = header_->inflight_version.load(std::memory_order_acquire);
    if (v1 & 1) continue;
    uint32_t n = header_->inflight_count.load(std::memory_order_relaxed);
    if (n > static_cast<uint32_t>(kMaxInflight)) n = kMaxInflight;
    for (uint32_t i = 0; i < n; ++i) {
      const InflightEntry& e = header_->inflight[i];
      rows[i] = InflightRow();
      rows[i].comm_id = e.comm_id.load(std::memory_order_relaxed);
      rows[i].last_issued_seq = e.last_issued_seq.load(std::memory_order_relaxed);
      rows[i].last_completed_seq = e.last_completed_seq.load(std::memory_order_relaxed);
      rows[i].oldest_launch_ns = e.oldest_launch_ns.load(std::memory_order_relaxed);
      if (version_ >= kRingVersion) LoadDetail(header_->inflight_detail[i], &rows[i]);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (header_->inflight_version.load(std::memory_order_relaxed) != v1) continue;
    for (uint32_t i = 0; i < n; ++i) {
      if (ValidateInflightRow(rows[i]) == nullptr) continue;
      rows[i].device = -1;
      rows[i].oldest = InflightCollective();
      if (invalid_details != nullptr) ++*invalid_details;
    }
    *count = static_cast<int>(n);
    return true;
  }
  return false;
}

bool QueuedBehindCommunication(const InflightCollective& c) {
  return c.state == InflightState::kQueued &&
         (c.blocker.kind == static_cast<uint8_t>(OpKind::kCollective) ||
          c.blocker.kind == static_cast<uint8_t>(OpKind::kP2P));
}

const char* BlockedByClass(const InflightCollective& c) {
  if (c.state != InflightState::kQueued) return "none";
  if (QueuedBehindCommunication(c)) return "communication";
  return c.blocker.op == 0 ? "unknown" : "work";
}

}  // namespace format
}  // namespace xtimer

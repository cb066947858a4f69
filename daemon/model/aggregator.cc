#include "daemon/model/aggregator.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "daemon/model/snapshot_builder.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {

using format::RecordType;

Aggregator::Aggregator(const AggregatorOptions& options, int64_t start_ns)
    : options_(options), start_ns_(start_ns), registry_(options), ranks_(options, &registry_) {
  RegisterBuiltinKinds();
  tap_ops_.reserve(1024);  // a read's ops, more than one ring read holds: grown once if not
}

Aggregator::~Aggregator() = default;

ProcessId Aggregator::AddProcess(int pid, const format::Identity& identity) {
  return AddProcess(Registrant{pid, static_cast<uint32_t>(geteuid()), ""}, identity, nullptr);
}

ProcessId Aggregator::AddProcess(const Registrant& who, const format::Identity& raw,
                                 std::vector<ProcessId>* evicted) {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.Add(who, raw, evicted);
}

void Aggregator::RemoveProcess(ProcessId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    registry_.Remove(id);
  }
  MaybeTrimMalloc();
}

void Aggregator::MarkExited(ProcessId id, const ExitCause& cause, int64_t now_ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    registry_.MarkExited(id, cause, now_ns);
  }
  MaybeTrimMalloc();
}

void Aggregator::SetCrashFrame(ProcessId id, const std::string& frame) {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  if (p != nullptr) p->crash_frame = frame.substr(0, kMaxCrashFrameBytes);
}

size_t Aggregator::ExpireExited(int64_t now_ns) {
  size_t removed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    removed = registry_.ExpireExited(now_ns);
  }
  MaybeTrimMalloc();
  return removed;
}

void Aggregator::NoteFreed(size_t bytes) { registry_.budget().NoteFreed(bytes); }

void Aggregator::MaybeTrimMalloc() { registry_.budget().MaybeReturn(MonotonicNs()); }

bool Aggregator::Connected(ProcessId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  return p != nullptr && p->connected;
}

void Aggregator::RefuseRegistration(const std::string& cause, const std::string& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  registry_.Refuse(cause, peer);
}

uint64_t Aggregator::refused(const std::string& cause) const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.refusals().count(cause);
}

size_t Aggregator::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.budget().total();
}

uint64_t Aggregator::history_chunks_allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.budget().history_chunks_allocated();
}

uint64_t Aggregator::memory_returns() const { return registry_.budget().returns(); }

size_t Aggregator::process_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.processes().size();
}

bool Aggregator::UpdateStatus(ProcessId id, const ProcessStatus& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  if (p == nullptr || !p->connected) return p != nullptr;
  format::Identity identity = status.identity;  // the job, host, pod, op log stay as registered
  identity.job = p->identity.job;
  identity.host = p->identity.host;
  identity.pod = p->identity.pod;
  identity.op_log = p->identity.op_log;
  if ((identity.rank != p->identity.rank || identity.local_rank != p->identity.local_rank) &&
      !registry_.ClaimRank(id, identity)) {
    return false;
  }
  ranks_.ApplyStatus(p, identity, status);
  return true;
}

Snapshot Aggregator::TakeSnapshot(int64_t now_ns, bool with_series) const {
  std::lock_guard<std::mutex> lock(mu_);
  return BuildSnapshot(registry_, options_, start_ns_, now_ns, with_series);
}

int Aggregator::AddOpTap(OpTap tap) {
  std::lock_guard<std::mutex> lock(mu_);
  taps_.emplace_back(next_tap_, std::move(tap));
  return next_tap_++;
}

void Aggregator::RemoveOpTap(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  taps_.erase(std::remove_if(taps_.begin(), taps_.end(),
                             [id](const std::pair<int, OpTap>& t) { return t.first == id; }),
              taps_.end());
}

std::vector<format::OpRecord> Aggregator::History(const RankKey& rank, uint64_t* end_seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(rank.process);
  if (end_seq != nullptr) *end_seq = p == nullptr ? 0 : p->ops_seen;
  if (p == nullptr) return {};
  return RankModel::History(*p, rank.device);
}

std::string Aggregator::KernelName(ProcessId id, uint32_t name_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  if (p == nullptr) return "";
  const std::string* name = p->names.Find(name_id);
  return name == nullptr ? "" : *name;
}

std::vector<format::NvtxRecord> Aggregator::NvtxEvents(ProcessId id, int64_t begin_ns,
                                                       int64_t end_ns,
                                                       std::map<uint32_t, std::string>* strings)
    const {
  std::lock_guard<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  if (p == nullptr) return {};
  std::vector<format::NvtxRecord> out = p->nvtx.Between(begin_ns, end_ns);
  for (const format::NvtxRecord& r : out) {
    for (uint32_t s : {r.name_id, r.domain_id}) {
      const std::string* text = s == 0 ? nullptr : p->nvtx.String(s);
      if (text != nullptr) (*strings)[s] = *text;
    }
  }
  return out;
}

PythonStats Aggregator::PythonTotals(ProcessId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ProcessState* p = registry_.Find(id);
  return p == nullptr ? PythonStats() : p->python;
}

// Ingest: the record kinds and their handlers (built-in op, name and comm records, and those
// added with AddRecordKind), one table indexed by the record's type byte.

void Aggregator::Ingest(ProcessId id, const format::RecordSlot* records, size_t n, int64_t now_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  ProcessState* p = registry_.Find(id);
  if (p == nullptr || !p->connected) return;
  IngestLocked(p, id, records, n, now_ns);
  OpHistory::FinishStores();
  if (registry_.budget().AboveHighWater()) registry_.EnforceBudget();
  const bool trim = registry_.budget().Pressing();
  lock.unlock();
  if (trim) MaybeTrimMalloc();
}

void Aggregator::RegisterBuiltinKinds() {
  kinds_ = format::RecordKinds::Builtin();
  handlers_[static_cast<uint8_t>(RecordType::kOp)] = &Aggregator::IngestOps;
  handlers_[static_cast<uint8_t>(RecordType::kName)] = &Aggregator::IngestNames;
  handlers_[static_cast<uint8_t>(RecordType::kComm)] = &Aggregator::IngestComms;
  handlers_[static_cast<uint8_t>(RecordType::kNvtx)] = &Aggregator::IngestNvtx;
  handlers_[static_cast<uint8_t>(RecordType::kNvtxString)] = &Aggregator::IngestNvtxStrings;
}

void Aggregator::AddRecordKind(uint8_t type, format::RecordKind kind, RecordHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  kinds_.Register(type, kind);
  extra_handlers_[type] = std::move(handler);
  handlers_[type] = &Aggregator::IngestExtras;
}

void Aggregator::IngestLocked(ProcessState* p, ProcessId id, const format::RecordSlot* records,
                              size_t n, int64_t now_ns) {
  IngestBatch batch{p, id, now_ns};
  tap_ops_.clear();
  for (size_t i = 0; i < n;) {
    const uint8_t type = records[i].header.type;
    size_t end = i + 1;
    while (end < n && records[end].header.type == type) ++end;
    const KindHandler handler = handlers_[type];
    if (handler != nullptr) (this->*handler)(batch, records + i, end - i);
    i = end;
  }
  if (tap_ops_.empty()) return;
  for (const auto& tap : taps_) tap.second(id, tap_ops_.data(), tap_ops_.size());
  tap_ops_.clear();
}

void Aggregator::IngestOps(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ranks_.Ops(b.p, slots, n, b.now_ns, &b.epoch, taps_.empty() ? nullptr : &tap_ops_);
}

void Aggregator::IngestNames(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ranks_.Names(b.p, slots, n);
}

void Aggregator::IngestComms(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ranks_.Comms(b.p, slots, n, b.now_ns);
}

void Aggregator::IngestNvtx(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ranks_.Nvtx(b.p, slots, n);
}

void Aggregator::IngestNvtxStrings(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ranks_.NvtxStrings(b.p, slots, n);
}

void Aggregator::IngestExtras(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  const RecordHandler& handler = extra_handlers_[slots[0].header.type];
  for (size_t i = 0; i < n; ++i) handler(b.id, slots[i]);
}

}  // namespace daemon
}  // namespace xtimer

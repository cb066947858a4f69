// Aggregator ingest: the record kinds and their handlers (built-in op, name and comm records, and
// those added with AddRecordKind), one table indexed by the record's type byte.
#include <algorithm>
#include <utility>

#include "daemon/model/aggregator.h"
#include "daemon/model/aggregator_state.h"
#include "daemon/model/comm_progress.h"
#include "daemon/model/op_stats.h"

namespace xtimer {
namespace daemon {

using format::OpKind;
using format::RecordType;

void Aggregator::Ingest(ProcessId id, const format::RecordSlot* records, size_t n, int64_t now_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  ProcessState* p = Find(id);
  if (p == nullptr || !p->connected) return;
  IngestLocked(p, id, records, n, now_ns);
  OpHistory::FinishStores();
  if (budget_.AboveHighWater()) EnforceBudget();
  const bool trim = budget_.Pressing();
  lock.unlock();
  if (trim) MaybeTrimMalloc();
}

void Aggregator::RegisterBuiltinKinds() {
  kinds_ = format::RecordKinds::Builtin();
  handlers_[static_cast<uint8_t>(RecordType::kOp)] = &Aggregator::IngestOps;
  handlers_[static_cast<uint8_t>(RecordType::kName)] = &Aggregator::IngestNames;
  handlers_[static_cast<uint8_t>(RecordType::kComm)] = &Aggregator::IngestComms;
}

void Aggregator::AddRecordKind(uint8_t type, format::RecordKind kind, RecordHandler handler) {
  kinds_.Register(type, kind);
  extra_handlers_[type] = std::move(handler);
  handlers_[type] = &Aggregator::IngestExtras;
}

void Aggregator::IngestLocked(ProcessState* p, ProcessId id, const format::RecordSlot* records, size_t n,
                              int64_t now_ns) {
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

Series* Aggregator::AddSeries(ProcessState* p, RankState* rank, const format::OpRecord& r, uint64_t key) {
  if (p->series_count >= options_.max_series_per_process || !Reserve(*p, SeriesBytes(options_))) {
    return nullptr;
  }
  const uint8_t size_class = static_cast<uint8_t>(key & 0xff);
  Series* s =
      rank->series.Add(key, std::make_unique<Series>(r.kind, r.op, r.dtype, size_class, options_));
  ++p->series_count;
  Charge(p, static_cast<int64_t>(SeriesBytes(options_)));
  return s;
}

void Aggregator::IngestOps(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) IngestOp(b, slots[i].op);
}

[[gnu::always_inline]] inline void Aggregator::IngestOp(IngestBatch& b, const format::OpRecord& r) {
  ProcessState* p = b.p;
  RankState* rank = RankOf(*p, r.device);
  const OpMeasures m = MeasuresOf(r);
  const uint64_t key =
      (uint64_t{r.kind} << 40) | (uint64_t{r.op} << 16) | (uint64_t{r.dtype} << 8) | m.size_class;
  Series* s = rank->series.Find(key);
  if (s == nullptr) s = AddSeries(p, rank, r, key);
  if (s == nullptr) {
    ++rank->unaggregated;
  } else {
    const int64_t dur = r.duration_ns;  // Validate bounds it to [0, 1 day]
    ++s->count;
    s->sum_ns += static_cast<uint64_t>(dur);
    s->bytes += static_cast<double>(r.bytes);
    s->flop += m.flop;
    // Every series shares the window geometry, so the step is computed once per batch.
    if (b.epoch < 0) b.epoch = s->window.EpochOf(b.now_ns);
    s->window.Add(b.epoch, dur, m.flop, m.bus_bytes, m.algo_bytes);
    const bool comm_op = r.kind == static_cast<uint8_t>(OpKind::kCollective) ||
                         r.kind == static_cast<uint8_t>(OpKind::kP2P);
    if (comm_op && r.comm_id != 0) NoteCompleted(rank, r, dur, b.now_ns);
  }
  if (!taps_.empty()) tap_ops_.push_back(TapOp{rank->device, p->ops_seen, &r});
  ++p->ops_seen;
  if (options_.history > 0 && !p->history.TryAppend(r)) AppendHistory(p, r);
}

inline void Aggregator::NoteCompleted(RankState* rank, const format::OpRecord& r, int64_t dur,
                                      int64_t now_ns) {
  CommState* c = FindOrAddComm(&rank->comms, r.comm_id, options_.max_comms_per_process);
  if (c == nullptr) return;
  if (r.kind == static_cast<uint8_t>(OpKind::kCollective)) {
    c->completed_seq = std::max(c->completed_seq, r.seq);
  }
  c->last_completed_ns = std::max(c->last_completed_ns, SaturatingAdd(r.gpu_start_ns, dur));
  c->last_activity_ns = now_ns;
}

void Aggregator::IngestNames(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  ProcessState* p = b.p;
  for (size_t i = 0; i < n; ++i) {
    const int64_t delta = p->names.Add(slots[i].name, options_.max_names_per_process,
                                       [this, p](size_t bytes) { return Reserve(*p, bytes); });
    if (delta != 0) Charge(p, delta);
  }
}

void Aggregator::IngestComms(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const format::CommRecord& r = slots[i].comm;
    CommState* c = FindOrAddComm(&RankForComm(b.p, r.device)->comms, r.comm_id,
                                 options_.max_comms_per_process);
    if (c == nullptr) continue;
    c->comm_rank = r.rank;
    c->comm_size = r.size;
    c->parent_id = r.parent_id;
    c->last_activity_ns = b.now_ns;
  }
}

void Aggregator::IngestExtras(IngestBatch& b, const format::RecordSlot* slots, size_t n) {
  const RecordHandler& handler = extra_handlers_[slots[0].header.type];
  for (size_t i = 0; i < n; ++i) handler(b.id, slots[i]);
}

}  // namespace daemon
}  // namespace xtimer

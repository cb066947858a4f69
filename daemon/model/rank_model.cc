#include "daemon/model/rank_model.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "daemon/model/comm_progress.h"
#include "daemon/model/op_stats.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;

// The time a valid in-flight table is known to hold: when it was read, or the hook's last
// heartbeat if older (its poller publishes the table, then beats, every cycle). A heartbeat in
// the future (a clock step, a forged ring) is ignored.
int64_t ObservedNs(const ProcessStatus& s) {
  if (s.read_ns <= 0) return 0;
  if (s.heartbeat_ns <= 0 || s.heartbeat_ns > s.read_ns) return s.read_ns;
  return s.heartbeat_ns;
}

}  // namespace

void RankModel::Ops(ProcessState* p, const format::RecordSlot* slots, size_t n, int64_t now_ns,
                    int64_t* epoch, std::vector<TapOp>* taps) {
  for (size_t i = 0; i < n; ++i) Op(p, slots[i].op, now_ns, epoch, taps);
}

[[gnu::always_inline]] inline void RankModel::Op(ProcessState* p, const format::OpRecord& r,
                                                 int64_t now_ns, int64_t* epoch,
                                                 std::vector<TapOp>* taps) {
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
    if (*epoch < 0) *epoch = s->window.EpochOf(now_ns);
    s->window.Add(*epoch, dur, m.flop, m.bus_bytes, m.algo_bytes);
    const bool comm_op = r.kind == static_cast<uint8_t>(OpKind::kCollective) ||
                         r.kind == static_cast<uint8_t>(OpKind::kP2P);
    if (comm_op && r.comm_id != 0) NoteCompleted(rank, r, dur, now_ns);
  }
  if (taps != nullptr) taps->push_back(TapOp{rank->device, p->ops_seen, &r});
  ++p->ops_seen;
  if (options_.history > 0 && !p->history.TryAppend(r)) registry_->AppendHistory(p, r);
}

Series* RankModel::AddSeries(ProcessState* p, RankState* rank, const format::OpRecord& r,
                             uint64_t key) {
  if (p->series_count >= options_.max_series_per_process ||
      !registry_->Reserve(*p, SeriesBytes(options_))) {
    return nullptr;
  }
  const uint8_t size_class = static_cast<uint8_t>(key & 0xff);
  Series* s =
      rank->series.Add(key, std::make_unique<Series>(r.kind, r.op, r.dtype, size_class, options_));
  ++p->series_count;
  registry_->Charge(p, static_cast<int64_t>(SeriesBytes(options_)));
  return s;
}

inline void RankModel::NoteCompleted(RankState* rank, const format::OpRecord& r, int64_t dur,
                                     int64_t now_ns) {
  CommState* c = FindOrAddComm(&rank->comms, r.comm_id, options_.max_comms_per_process);
  if (c == nullptr) return;
  if (r.kind == static_cast<uint8_t>(OpKind::kCollective)) {
    c->completed_seq = std::max(c->completed_seq, r.seq);
  }
  c->last_completed_ns = std::max(c->last_completed_ns, SaturatingAdd(r.gpu_start_ns, dur));
  c->last_activity_ns = now_ns;
}

void RankModel::Names(ProcessState* p, const format::RecordSlot* slots, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const int64_t delta =
        p->names.Add(slots[i].name, options_.max_names_per_process,
                     [this, p](size_t bytes) { return registry_->Reserve(*p, bytes); });
    if (delta != 0) registry_->Charge(p, delta);
  }
}

void RankModel::Nvtx(ProcessState* p, const format::RecordSlot* slots, size_t n) {
  const auto reserve = [this, p](size_t bytes) { return registry_->Reserve(*p, bytes); };
  for (size_t i = 0; i < n; ++i) {
    const format::NvtxRecord& r = slots[i].nvtx;
    const bool range = r.event == static_cast<uint8_t>(format::NvtxEvent::kRange);
    const bool python = p->python.Add(r, p->nvtx);
    if (range && (r.flags & format::kNvtxStep) != 0) {
      // A step lasts from its mark's start to the next one's (an optimizer step's span covers
      // only part of the iteration): docs/analysis.md "Steps".
      int64_t& last = python ? p->python_step_start_ns : p->nvtx_step_start_ns;
      if (last > 0 && r.start_ns > last) {
        (python ? p->python_steps : p->steps)
            .Observe(static_cast<double>(r.start_ns - last) * 1e-9);
      }
      last = std::max(last, r.start_ns);
    }
    const size_t charged = p->nvtx.Add(r, reserve);
    if (charged != 0) registry_->Charge(p, static_cast<int64_t>(charged));
  }
}

void RankModel::NvtxStrings(ProcessState* p, const format::RecordSlot* slots, size_t n) {
  const auto reserve = [this, p](size_t bytes) { return registry_->Reserve(*p, bytes); };
  for (size_t i = 0; i < n; ++i) {
    const int64_t delta = p->nvtx.AddString(slots[i].name, options_.max_names_per_process, reserve);
    if (delta != 0) registry_->Charge(p, delta);
  }
}

void RankModel::Comms(ProcessState* p, const format::RecordSlot* slots, size_t n,
                      int64_t now_ns) {
  for (size_t i = 0; i < n; ++i) {
    const format::CommRecord& r = slots[i].comm;
    CommState* c = FindOrAddComm(&RankForComm(p, r.device)->comms, r.comm_id,
                                 options_.max_comms_per_process);
    if (c == nullptr) continue;
    c->comm_rank = r.rank;
    c->comm_size = r.size;
    c->parent_id = r.parent_id;
    c->last_activity_ns = now_ns;
  }
}

RankState* RankModel::RankForComm(ProcessState* p, int device) {
  if (device == kNoDevice) return p->ranks.front().get();
  if (p->ranks.size() == 1) {
    if (p->comm_device == kNoDevice) p->comm_device = device;
    if (p->comm_device == device) return p->ranks.front().get();
    p->ranks.front()->device = p->comm_device;  // a second device: each becomes a rank
  }
  for (const auto& r : p->ranks) {
    if (r->device == device) return r.get();
  }
  if (p->ranks.size() >= options_.max_ranks_per_process ||
      !registry_->Reserve(*p, RankBytes(options_))) {
    return p->ranks.front().get();
  }
  auto rank = std::make_unique<RankState>();
  rank->device = device;
  auto at = std::find_if(p->ranks.begin(), p->ranks.end(), [device](const auto& r) {
    return r->device > device;
  });
  RankState* added = p->ranks.insert(at, std::move(rank))->get();
  registry_->Charge(p, static_cast<int64_t>(RankBytes(options_)));
  return added;
}

RankState* RankModel::RankOfRow(const ProcessState& p, const format::InflightRow& row) {
  if (row.device >= 0 || p.ranks.size() == 1) return RankOf(p, row.device);
  for (const auto& r : p.ranks) {  // a row without a device (ring version 1)
    if (r->comms.count(row.comm_id) != 0) return r.get();
  }
  return p.ranks.front().get();
}

void RankModel::ApplyStatus(ProcessState* p, const format::Identity& identity,
                            const ProcessStatus& status) {
  p->identity = identity;
  p->status.identity = identity;
  p->status.written = status.written;
  p->status.dropped = status.dropped;
  std::copy(std::begin(status.untimed), std::end(status.untimed), std::begin(p->status.untimed));
  p->status.hook_own_ns = status.hook_own_ns;
  p->status.timing = status.timing;
  p->status.invalid = status.invalid;
  p->status.lost = status.lost;
  p->status.fill = std::min(1.0, std::max(0.0, status.fill));
  p->status.heartbeat_ns = status.heartbeat_ns;
  if (!status.inflight_valid) return;
  p->status.observed_ns = ObservedNs(status);
  for (auto& rank : p->ranks) {
    for (auto& c : rank->comms) c.second.has_row = false;
  }
  const size_t rows = std::min<size_t>(status.inflight.size(), format::kMaxInflight);
  for (size_t i = 0; i < rows; ++i) {
    const format::InflightRow& row = status.inflight[i];
    CommState* c = FindOrAddComm(&RankOfRow(*p, row)->comms, row.comm_id,
                                 options_.max_comms_per_process + 1);
    if (c == nullptr) continue;
    if (c->has_row) {
      MergeRow(row, &c->row);
    } else {
      c->row = row;
    }
    c->has_row = true;
  }
}

std::vector<format::OpRecord> RankModel::History(const ProcessState& p, int device) {
  std::vector<format::OpRecord> out;
  const bool all = device == kWholeProcess || p.ranks.size() == 1;
  out.reserve(p.history.size());
  p.history.ForEach([&](const format::OpRecord& r) {
    if (all || RankOf(p, r.device)->device == device) out.push_back(r);
  });
  return out;
}

}  // namespace daemon
}  // namespace xtimer

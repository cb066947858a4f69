#include "daemon/aggregator.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "daemon/log.h"
#include "daemon/op_stats.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;
using format::RecordType;

constexpr size_t kMaxNameLength = 4096;
constexpr size_t kHistoryChunk = 4096;

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

double AgeSeconds(int64_t now_ns, int64_t then_ns) {
  if (then_ns <= 0 || then_ns >= now_ns) return 0;
  return (static_cast<double>(now_ns) - static_cast<double>(then_ns)) * 1e-9;
}

}  // namespace

std::string SanitizeLabel(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '_';
  }
  return out;
}

struct Series {
  Series(uint8_t kind, uint16_t op, uint8_t dtype, uint8_t size_class,
         const AggregatorOptions& o)
      : kind(kind),
        op(op),
        dtype(dtype),
        size_class(size_class),
        window(o.window_ns, o.window_buckets, o.window_samples) {}
  uint8_t kind;
  uint16_t op;
  uint8_t dtype;
  uint8_t size_class;
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  double bytes = 0;
  double flop = 0;
  LatencyWindow window;
};

struct Comm {
  uint64_t completed_seq = 0;  // from completed records
  int64_t last_completed_ns = 0;
  int64_t last_activity_ns = 0;
  bool has_row = false;  // listed in the ring's in-flight table now
  format::InflightRow row;
  int comm_rank = -1;
  int comm_size = 0;
  uint64_t parent_id = 0;
};

struct Aggregator::Process {
  int pid = 0;
  format::Identity identity;
  ProcessStatus status;  // inflight rows are moved into comms
  int64_t registered_ns = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Series>> series;
  uint64_t last_key = ~uint64_t{0};
  Series* last_series = nullptr;
  std::unordered_map<uint64_t, Comm> comms;
  uint64_t unaggregated = 0;
  // A ring of options_.history records in lazily allocated chunks: no reallocation, and an idle
  // process costs nothing.
  std::vector<std::unique_ptr<format::OpRecord[]>> history_chunks;
  uint64_t history_total = 0;  // records ever appended
  uint64_t ops_seen = 0;       // op records ever ingested (the tap's sequence number)
  std::unordered_map<uint32_t, std::string> names;
  uint32_t pending_name = 0;
  uint16_t pending_part = 0;
  std::string pending_text;
  mutable bool conflict_logged = false;
};

Aggregator::Aggregator(const AggregatorOptions& options, int64_t start_ns)
    : options_(options), start_ns_(start_ns) {}

Aggregator::~Aggregator() = default;

Aggregator::Process* Aggregator::Find(ProcessId id) const {
  auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : it->second.get();
}

Aggregator::ProcessId Aggregator::AddProcess(int pid, const format::Identity& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = std::make_unique<Process>();
  p->pid = pid;
  p->identity = identity;
  p->status.identity = identity;
  const ProcessId id = next_id_++;
  processes_.emplace(id, std::move(p));
  ++registrations_;
  return id;
}

void Aggregator::RemoveProcess(ProcessId id) {
  std::lock_guard<std::mutex> lock(mu_);
  processes_.erase(id);
}

void Aggregator::CountRejectedRegistration() {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_;
}

size_t Aggregator::process_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_.size();
}

namespace {

Comm* FindOrAddComm(std::unordered_map<uint64_t, Comm>* comms, uint64_t comm_id, size_t max) {
  auto it = comms->find(comm_id);
  if (it != comms->end()) return &it->second;
  if (comms->size() >= max) {
    // Evict the least recently active communicator that the in-flight table no longer lists.
    auto victim = comms->end();
    for (auto c = comms->begin(); c != comms->end(); ++c) {
      if (c->second.has_row) continue;
      if (victim == comms->end() || c->second.last_activity_ns < victim->second.last_activity_ns) {
        victim = c;
      }
    }
    if (victim == comms->end()) return nullptr;
    comms->erase(victim);
  }
  return &comms->emplace(comm_id, Comm()).first->second;
}

}  // namespace

void Aggregator::Ingest(ProcessId id, const format::RecordSlot* records, size_t n,
                        int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  Process* p = Find(id);
  if (p == nullptr) return;
  int64_t epoch = -1;
  for (size_t i = 0; i < n; ++i) {
    const format::RecordSlot& slot = records[i];
    switch (static_cast<RecordType>(slot.header.type)) {
      case RecordType::kOp: {
        const format::OpRecord& r = slot.op;
        const uint8_t sc = SizeClassOf(r);
        const uint64_t key = (uint64_t{r.kind} << 40) | (uint64_t{r.op} << 16) |
                             (uint64_t{r.dtype} << 8) | sc;
        Series* s = p->last_series;
        if (key != p->last_key || s == nullptr) {
          auto it = p->series.find(key);
          if (it != p->series.end()) {
            s = it->second.get();
          } else if (p->series.size() < options_.max_series_per_process) {
            s = p->series
                    .emplace(key, std::make_unique<Series>(r.kind, r.op, r.dtype, sc, options_))
                    .first->second.get();
          } else {
            s = nullptr;
          }
          p->last_key = key;
          p->last_series = s;
        }
        if (s == nullptr) {
          ++p->unaggregated;
        } else {
          const int64_t dur = r.duration_ns;  // Validate bounds it to [0, 1 day]
          const double flop = FlopOf(r);
          const bool comm_op = r.kind == static_cast<uint8_t>(OpKind::kCollective) ||
                               r.kind == static_cast<uint8_t>(OpKind::kP2P);
          const double algo = comm_op ? AlgoBytesOf(r) : 0;
          const double bus = comm_op ? algo * BusFactor(r.op, r.comm_size) : 0;
          ++s->count;
          s->sum_ns += static_cast<uint64_t>(dur);
          s->bytes += static_cast<double>(r.bytes);
          s->flop += flop;
          // Every series shares the window geometry, so the step is computed once per batch.
          if (epoch < 0) epoch = s->window.EpochOf(now_ns);
          s->window.Add(epoch, dur, flop, bus, algo);
          if (comm_op && r.comm_id != 0) {
            Comm* c = FindOrAddComm(&p->comms, r.comm_id, options_.max_comms_per_process);
            if (c != nullptr) {
              if (r.kind == static_cast<uint8_t>(OpKind::kCollective)) {
                c->completed_seq = std::max(c->completed_seq, r.seq);
              }
              c->last_completed_ns =
                  std::max(c->last_completed_ns, SaturatingAdd(r.gpu_start_ns, dur));
              c->last_activity_ns = now_ns;
            }
          }
        }
        if (tap_) tap_(id, p->ops_seen, r);
        ++p->ops_seen;
        if (options_.history > 0) {
          const size_t at = static_cast<size_t>(p->history_total % options_.history);
          const size_t chunk = at / kHistoryChunk;
          if (chunk >= p->history_chunks.size()) {
            p->history_chunks.emplace_back(new format::OpRecord[kHistoryChunk]);
          }
          p->history_chunks[chunk][at % kHistoryChunk] = r;
          ++p->history_total;
        }
        break;
      }
      case RecordType::kName: {
        const format::NameRecord& r = slot.name;
        if (r.part == 0) {
          p->pending_name = r.name_id;
          p->pending_text.clear();
        } else if (r.name_id != p->pending_name || r.part != p->pending_part) {
          p->pending_name = 0;  // out of order: drop the name
          break;
        }
        if (p->pending_name == 0) break;
        const size_t len = std::min<size_t>(r.length, format::kNameChunk);
        const size_t room = kMaxNameLength - std::min(kMaxNameLength, p->pending_text.size());
        p->pending_text.append(r.text, std::min(len, room));
        p->pending_part = static_cast<uint16_t>(r.part + 1);
        if (r.flags & format::kNameLast) {
          if (p->names.size() < options_.max_names_per_process ||
              p->names.count(r.name_id) != 0) {
            p->names[r.name_id] = std::move(p->pending_text);
          }
          p->pending_text.clear();
          p->pending_name = 0;
        }
        break;
      }
      case RecordType::kComm: {
        const format::CommRecord& r = slot.comm;
        Comm* c = FindOrAddComm(&p->comms, r.comm_id, options_.max_comms_per_process);
        if (c != nullptr) {
          c->comm_rank = r.rank;
          c->comm_size = r.size;
          c->parent_id = r.parent_id;
          c->last_activity_ns = now_ns;
        }
        break;
      }
    }
  }
}

void Aggregator::UpdateStatus(ProcessId id, const ProcessStatus& status) {
  std::lock_guard<std::mutex> lock(mu_);
  Process* p = Find(id);
  if (p == nullptr) return;
  p->identity = status.identity;
  p->status.identity = status.identity;
  p->status.written = status.written;
  p->status.dropped = status.dropped;
  std::copy(std::begin(status.untimed), std::end(status.untimed), std::begin(p->status.untimed));
  p->status.invalid = status.invalid;
  p->status.lost = status.lost;
  p->status.fill = std::min(1.0, std::max(0.0, status.fill));
  p->status.heartbeat_ns = status.heartbeat_ns;
  if (!status.inflight_valid) return;
  for (auto& c : p->comms) c.second.has_row = false;
  const size_t rows = std::min<size_t>(status.inflight.size(), format::kMaxInflight);
  for (size_t i = 0; i < rows; ++i) {
    const format::InflightRow& row = status.inflight[i];
    Comm* c = FindOrAddComm(&p->comms, row.comm_id, options_.max_comms_per_process + 1);
    if (c == nullptr) continue;
    c->has_row = true;
    c->row = row;
  }
}

Snapshot Aggregator::TakeSnapshot(int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot snap;
  snap.registrations = registrations_;
  snap.registrations_rejected = rejected_;
  snap.start_ns = start_ns_;
  std::set<std::string> seen;
  std::vector<int64_t> scratch;
  snap.processes.reserve(processes_.size());
  for (const auto& entry : processes_) {
    const Process& p = *entry.second;
    ProcessSnapshot ps;
    ps.id = entry.first;
    ps.pid = p.pid;
    ps.job = SanitizeLabel(p.identity.job);
    ps.host = SanitizeLabel(p.identity.host);
    ps.pod = SanitizeLabel(p.identity.pod);
    ps.rank = p.identity.rank;
    ps.local_rank = p.identity.local_rank;
    ps.world_size = p.identity.world_size;
    std::string key = ps.job + '\0' + ps.host + '\0' + ps.pod + '\0' + std::to_string(ps.rank) +
                      '\0' + std::to_string(ps.local_rank);
    if (!seen.insert(key).second) {
      ps.hidden = true;
      ++snap.identity_conflicts;
      if (!p.conflict_logged) {
        p.conflict_logged = true;
        Logf("pid %d has the same job/host/pod/rank/local_rank as another live process "
             "(rank %d); its series are not exported",
             p.pid, ps.rank);
      }
    }
    ps.written = p.status.written;
    ps.dropped = p.status.dropped;
    std::copy(std::begin(p.status.untimed), std::end(p.status.untimed), std::begin(ps.untimed));
    ps.invalid = p.status.invalid;
    ps.lost = p.status.lost;
    ps.unaggregated = p.unaggregated;
    ps.fill = p.status.fill;
    ps.heartbeat_age_s = AgeSeconds(now_ns, p.status.heartbeat_ns);
    ps.up = options_.stale_heartbeat_ns <= 0 ||
            ps.heartbeat_age_s * 1e9 < static_cast<double>(options_.stale_heartbeat_ns);
    ps.history = std::min<uint64_t>(p.history_total, options_.history);

    std::vector<uint64_t> keys;
    keys.reserve(p.series.size());
    for (const auto& s : p.series) keys.push_back(s.first);
    std::sort(keys.begin(), keys.end());
    ps.series.reserve(keys.size());
    for (uint64_t k : keys) {
      const Series& s = *p.series.at(k);
      SeriesSnapshot ss;
      ss.kind = s.kind;
      ss.op = s.op;
      ss.dtype = s.dtype;
      ss.size_class = s.size_class;
      ss.count = s.count;
      ss.seconds = static_cast<double>(s.sum_ns) * 1e-9;
      ss.bytes = s.bytes;
      ss.flop = s.flop;
      ss.window = s.window.Compute(now_ns, &scratch);
      ps.series.push_back(ss);
    }

    std::vector<uint64_t> comm_ids;
    for (const auto& c : p.comms) comm_ids.push_back(c.first);
    std::sort(comm_ids.begin(), comm_ids.end());
    for (uint64_t cid : comm_ids) {
      const Comm& c = p.comms.at(cid);
      CommSnapshot cs;
      cs.comm_id = cid;
      cs.last_completed_seq = c.completed_seq;
      if (c.has_row) {
        cs.last_completed_seq = std::max(cs.last_completed_seq, c.row.last_completed_seq);
        cs.last_issued_seq = c.row.last_issued_seq;
        cs.oldest_inflight_age_s = AgeSeconds(now_ns, c.row.oldest_launch_ns);
        cs.hang = c.row.oldest_launch_ns > 0 &&
                  cs.oldest_inflight_age_s * 1e9 > static_cast<double>(options_.hang_timeout_ns);
      }
      cs.last_issued_seq = std::max(cs.last_issued_seq, cs.last_completed_seq);
      cs.last_completed_ns = c.last_completed_ns;
      cs.comm_rank = c.comm_rank;
      cs.comm_size = c.comm_size;
      cs.parent_id = c.parent_id;
      ps.hang = ps.hang || cs.hang;
      ps.comms.push_back(cs);
    }
    snap.processes.push_back(std::move(ps));
  }
  return snap;
}

void Aggregator::SetOpTap(OpTap tap) {
  std::lock_guard<std::mutex> lock(mu_);
  tap_ = std::move(tap);
}

std::vector<format::OpRecord> Aggregator::History(ProcessId id, uint64_t* end_seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<format::OpRecord> out;
  Process* p = Find(id);
  if (end_seq != nullptr) *end_seq = p == nullptr ? 0 : p->ops_seen;
  if (p == nullptr) return out;
  const uint64_t size = std::min<uint64_t>(p->history_total, options_.history);
  out.reserve(size);
  for (uint64_t i = p->history_total - size; i < p->history_total; ++i) {
    const size_t at = static_cast<size_t>(i % options_.history);
    out.push_back(p->history_chunks[at / kHistoryChunk][at % kHistoryChunk]);
  }
  return out;
}

std::string Aggregator::KernelName(ProcessId id, uint32_t name_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  Process* p = Find(id);
  if (p == nullptr) return "";
  auto it = p->names.find(name_id);
  return it == p->names.end() ? "" : it->second;
}

}  // namespace daemon
}  // namespace xtimer

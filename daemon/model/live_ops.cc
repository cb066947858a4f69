#include "daemon/model/live_ops.h"

#include <algorithm>
#include <utility>

#include "daemon/model/op_stats.h"

namespace xtimer {
namespace daemon {

using analysis::Arrival;

analysis::TimedOp TimedOpOf(const format::OpRecord& r) {
  return analysis::TimedOpOfRecord(r, r.comm_size, r.count);
}

struct LiveOps::Ring {
  std::vector<Arrival> slots;  // grows to ring_size, then wraps
  size_t next = 0;             // the slot the next arrival overwrites once full
  int64_t last_ns = 0;         // the newest arrival's end (eviction order)
  OwnCounters counters;
  std::vector<Slice> new_slices;
  std::vector<int64_t> p2p_ends;  // grows to kP2PCadence, then wraps at p2p_next
  size_t p2p_next = 0;
};

struct LiveOps::Process {
  Process() : summarizer(kPendingWork) {}
  analysis::RankSummarizer summarizer;
  int32_t device = -1;
  LastOp last;
  std::map<uint64_t, Ring> comms;
  size_t new_slices = 0;  // over all comms

  size_t Bytes() const;
};

LiveOps::LiveOps(size_t ring_size, size_t max_comms)
    : ring_size_(std::max<size_t>(ring_size, 1)), max_comms_(std::max<size_t>(max_comms, 1)) {}

LiveOps::~LiveOps() = default;

LiveOps::Ring* LiveOps::RingFor(Process* p, uint64_t comm_id, int64_t now_ns) {
  auto it = p->comms.find(comm_id);
  if (it != p->comms.end()) return &it->second;
  if (p->comms.size() >= max_comms_) {
    // The communicator whose newest arrival is oldest goes (its counters restart if it returns).
    auto victim = std::min_element(p->comms.begin(), p->comms.end(),
                                   [](const std::pair<const uint64_t, Ring>& a,
                                      const std::pair<const uint64_t, Ring>& b) {
                                     return a.second.last_ns < b.second.last_ns;
                                   });
    p->new_slices -= victim->second.new_slices.size();
    p->comms.erase(victim);
  }
  Ring* ring = &p->comms[comm_id];
  ring->last_ns = now_ns;
  return ring;
}

void LiveOps::Add(const RankKey& key, const format::OpRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(ProcessOf(key), r);
}

void LiveOps::AddAll(uint64_t process_id, const TapOp* ops, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  Process* p = nullptr;
  int device = 0;
  for (size_t i = 0; i < n; ++i) {
    // A batch is one process's: its ops mostly count for one rank, one lookup.
    if (p == nullptr || ops[i].rank_device != device) {
      device = ops[i].rank_device;
      p = ProcessOf(RankKey{process_id, device});
    }
    AddLocked(p, *ops[i].op);
  }
}

LiveOps::Process* LiveOps::ProcessOf(const RankKey& key) {
  auto& slot = processes_[key];
  if (!slot) slot = std::make_unique<Process>();
  return slot.get();
}

void LiveOps::AddLocked(Process* p, const format::OpRecord& r) {
  const analysis::TimedOp op = TimedOpOf(r);
  const double bus = r.kind == static_cast<uint8_t>(format::OpKind::kCollective) ? BusBytesOf(r)
                                                                                   : 0;
  if (r.device >= 0) p->device = r.device;
  const int64_t end = r.gpu_start_ns + r.duration_ns;  // Validate bounds the duration
  if (!p->last.valid || end >= p->last.end_ns) {
    p->last = LastOp{true, r.op, r.kind, r.comm_id, r.seq, r.cpu_launch_ns, end};
  }
  if (r.kind == static_cast<uint8_t>(format::OpKind::kP2P) && r.comm_id != 0) {
    AddP2P(p, r.comm_id, end);
  }
  Arrival a;
  if (!p->summarizer.Add(op, &a) || a.comm_id == 0) return;
  Ring* ring = RingFor(p, a.comm_id, a.end_ns);
  if (ring->slots.size() < ring_size_) {
    ring->slots.push_back(a);
  } else {
    ring->slots[ring->next] = a;
    ring->next = (ring->next + 1) % ring_size_;
  }
  ring->last_ns = std::max(ring->last_ns, a.end_ns);
  OwnCounters& c = ring->counters;
  ++c.instances;
  c.time_s += static_cast<double>(a.end_ns - a.start_ns) * 1e-9;
  c.bus_bytes += bus;
  c.busy_before_s += static_cast<double>(a.busy_before_ns) * 1e-9;
  c.idle_before_s += static_cast<double>(a.idle_before_ns) * 1e-9;
  if (p->new_slices >= kMaxNewSlices) {
    ++slices_dropped_;
    return;
  }
  ring->new_slices.push_back(Slice{a.seq, a.start_ns, a.end_ns, a.bytes, a.op});
  ++p->new_slices;
}

void LiveOps::AddP2P(Process* p, uint64_t comm_id, int64_t end_ns) {
  Ring* ring = RingFor(p, comm_id, end_ns);
  ring->last_ns = std::max(ring->last_ns, end_ns);
  if (ring->p2p_ends.size() < kP2PCadence) {
    ring->p2p_ends.push_back(end_ns);
    return;
  }
  ring->p2p_ends[ring->p2p_next] = end_ns;
  ring->p2p_next = (ring->p2p_next + 1) % kP2PCadence;
}

// What a rank's state holds on the heap, about (its rings and their map nodes).
size_t LiveOps::Process::Bytes() const {
  size_t bytes = sizeof(Process);
  for (const auto& c : comms) {
    bytes += sizeof(c) + 32 + c.second.slots.capacity() * sizeof(Arrival) +
             c.second.new_slices.capacity() * sizeof(Slice) +
             c.second.p2p_ends.capacity() * sizeof(int64_t);
  }
  return bytes;
}

std::map<RankKey, ProcessOps> LiveOps::Copy(const std::set<RankKey>& keep,
                                            size_t* forgotten_bytes) {
  std::map<RankKey, ProcessOps> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (keep.count(it->first) == 0) {
      if (forgotten_bytes != nullptr) *forgotten_bytes += it->second->Bytes();
      it = processes_.erase(it);
      continue;
    }
    Process& p = *it->second;
    ProcessOps& po = out[it->first];
    po.device = p.device;
    po.last = p.last;
    for (auto& c : p.comms) {
      Ring& ring = c.second;
      CommOps& co = po.comms[c.first];
      co.counters = ring.counters;
      co.new_slices.swap(ring.new_slices);
      co.arrivals.reserve(ring.slots.size());
      co.arrivals.insert(co.arrivals.end(), ring.slots.begin() + ring.next, ring.slots.end());
      co.arrivals.insert(co.arrivals.end(), ring.slots.begin(), ring.slots.begin() + ring.next);
      co.p2p_ends.assign(ring.p2p_ends.begin() + ring.p2p_next, ring.p2p_ends.end());
      co.p2p_ends.insert(co.p2p_ends.end(), ring.p2p_ends.begin(),
                         ring.p2p_ends.begin() + ring.p2p_next);
    }
    p.new_slices = 0;
    ++it;
  }
  return out;
}

uint64_t LiveOps::slices_dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slices_dropped_;
}

size_t LiveOps::process_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_.size();
}

}  // namespace daemon
}  // namespace xtimer

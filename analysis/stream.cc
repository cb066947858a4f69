#include "analysis/stream.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <utility>

#include "analysis/comm_index.h"
#include "analysis/host_spans.h"
#include "analysis/instance_fold.h"
#include "analysis/passes.h"

namespace xtimer {
namespace analysis {
namespace {

// The widest span of seqs a communicator may hold unfolded (sparser seqs are not streamed).
constexpr uint64_t kMaxSeqSpan = uint64_t{1} << 22;

struct Held {
  uint32_t slot;
  Arrival arrival;
};

// One communicator's instances not folded yet, and how far each member has come.
struct CommStream {
  std::unique_ptr<InstanceFolder> folder;
  std::deque<std::vector<Held>> pending;  // pending[i]: instance base + i
  uint64_t base = 0;
  uint64_t folded_below = 0;         // every seq below has been folded
  std::vector<uint64_t> next;        // per slot: the seq after its latest arrival (0: none yet)
  std::vector<uint64_t> last;        // per slot: its plan's highest seq
  std::vector<uint8_t> done;         // per slot: no arrival left to come
  std::vector<CommEntry> entries;    // scratch for one instance
};

}  // namespace

void RankPlan::Add(uint64_t comm_id, int32_t comm_size, uint64_t seq) {
  if (!comms.empty() && comms.back().comm_id == comm_id) {  // consecutive arrivals, mostly
    comms.back().comm_size = std::max(comms.back().comm_size, comm_size);
    comms.back().last_seq = std::max(comms.back().last_seq, seq);
    return;
  }
  for (Comm& c : comms) {
    if (c.comm_id == comm_id) {
      c.comm_size = std::max(c.comm_size, comm_size);
      c.last_seq = std::max(c.last_seq, seq);
      return;
    }
  }
  comms.push_back({comm_id, comm_size, seq});
}

struct AnalysisStream::State {
  std::vector<RankInput> ranks;
  std::vector<HostIndex> hosts;  // by rank; empty when no rank has host spans
  Options options;
  std::vector<CommView> comms;
  std::vector<CommStream> streams;  // parallel to comms
  struct Place {
    uint64_t comm_id;
    uint32_t comm;
    uint32_t slot;
  };
  std::vector<std::vector<Place>> places;  // per rank: each communicator it has arrivals on
  size_t held = 0;
  bool failed = false;

  bool AddOne(const std::vector<Place>& mine, size_t* place, const Arrival& a);
  void FoldComm(size_t c, bool all);
};

AnalysisStream::AnalysisStream(std::vector<RankInput> ranks, const std::vector<RankPlan>& plans,
                               const Options& options)
    : state_(new State) {
  State& s = *state_;
  s.ranks = std::move(ranks);
  s.hosts = HostIndexes(s.ranks);
  s.options = options;
  std::vector<std::vector<ArrivalComm>> arrival_comms(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size() && r < plans.size(); ++r) {
    for (const RankPlan::Comm& c : plans[r].comms) {
      arrival_comms[r].push_back({c.comm_id, c.comm_size, 0});
    }
  }
  s.comms = CommsOf(s.ranks, arrival_comms);
  s.streams.resize(s.comms.size());
  s.places.resize(s.ranks.size());
  std::vector<std::vector<uint64_t>> last(s.comms.size());
  std::vector<std::vector<uint8_t>> has(s.comms.size());
  for (size_t c = 0; c < s.comms.size(); ++c) {
    last[c].assign(s.comms[c].inputs.size(), 0);
    has[c].assign(s.comms[c].inputs.size(), 0);
  }
  for (size_t r = 0; r < s.ranks.size() && r < plans.size(); ++r) {
    for (const RankPlan::Comm& p : plans[r].comms) {
      const size_t c = CommIndexOf(s.comms, p.comm_id);
      const std::vector<uint32_t>& in = s.comms[c].inputs;
      const uint32_t slot = static_cast<uint32_t>(
          std::lower_bound(in.begin(), in.end(), static_cast<uint32_t>(r)) - in.begin());
      s.places[r].push_back({p.comm_id, static_cast<uint32_t>(c), slot});
      last[c][slot] = p.last_seq;
      has[c][slot] = 1;
    }
  }
  for (size_t c = 0; c < s.comms.size(); ++c) {
    CommView& v = s.comms[c];
    CommStream& cs = s.streams[c];
    v.facts.keep_seqs = SeqsToKeep(v, s.ranks, last[c], has[c]);
    cs.folder.reset(new InstanceFolder(&v, options, s.hosts.empty() ? nullptr : &s.hosts));
    cs.next.assign(v.inputs.size(), 0);
    cs.last = last[c];
    cs.done.resize(v.inputs.size());
    for (size_t slot = 0; slot < v.inputs.size(); ++slot) cs.done[slot] = !has[c][slot];
  }
}

AnalysisStream::~AnalysisStream() = default;

size_t AnalysisStream::held() const { return state_->held; }

bool AnalysisStream::Add(size_t rank, const std::vector<Arrival>& arrivals) {
  State& s = *state_;
  if (s.failed || rank >= s.ranks.size()) return s.failed = true, false;
  const std::vector<State::Place>& mine = s.places[rank];
  size_t place = 0;
  for (const Arrival& a : arrivals) {
    if (!s.AddOne(mine, &place, a)) return s.failed = true, false;
  }
  return true;
}

// `*place`: where the rank's previous arrival went (consecutive arrivals mostly share one).
bool AnalysisStream::State::AddOne(const std::vector<Place>& mine, size_t* place,
                                   const Arrival& a) {
  size_t p = *place;
  if (p >= mine.size() || mine[p].comm_id != a.comm_id) {
    for (p = 0; p < mine.size() && mine[p].comm_id != a.comm_id;) ++p;
    if (p == mine.size()) return false;
    *place = p;
  }
  CommStream& cs = streams[mine[p].comm];
  const uint32_t slot = mine[p].slot;
  if (cs.done[slot] || a.seq == std::numeric_limits<uint64_t>::max() || a.seq < cs.next[slot] ||
      a.seq > cs.last[slot] || a.seq < cs.folded_below) {
    return false;
  }
  if (cs.pending.empty()) cs.base = a.seq;
  if (a.seq < cs.base) {
    if (cs.base - a.seq > kMaxSeqSpan) return false;
    cs.pending.insert(cs.pending.begin(), cs.base - a.seq, std::vector<Held>());
    cs.base = a.seq;
  }
  const uint64_t i = a.seq - cs.base;
  if (i >= kMaxSeqSpan) return false;
  if (i >= cs.pending.size()) cs.pending.resize(i + 1);
  std::vector<Held>& group = cs.pending[i];
  if (group.empty()) group.reserve(cs.next.size());  // every member, usually
  group.push_back({slot, a});
  cs.next[slot] = a.seq + 1;
  cs.done[slot] = a.seq == cs.last[slot];
  ++held;
  return true;
}

void AnalysisStream::Fold() {
  for (size_t c = 0; c < state_->comms.size(); ++c) state_->FoldComm(c, false);
}

// Folds the pending instances below every unfinished member's next seq (all of them when
// `all`), in seq order.
void AnalysisStream::State::FoldComm(size_t c, bool all) {
  CommStream& cs = streams[c];
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  for (size_t slot = 0; slot < cs.next.size() && !all; ++slot) {
    if (!cs.done[slot]) limit = std::min(limit, cs.next[slot]);
  }
  while (!cs.pending.empty() && (all || cs.base < limit)) {
    std::vector<Held>& group = cs.pending.front();
    auto by_slot = [](const Held& x, const Held& y) { return x.slot < y.slot; };
    if (!std::is_sorted(group.begin(), group.end(), by_slot)) {
      std::sort(group.begin(), group.end(), by_slot);
    }
    cs.entries.clear();
    for (const Held& h : group) {
      const Arrival& a = h.arrival;
      cs.entries.push_back({a.seq, a.start_ns, a.end_ns, a.busy_before_ns, a.idle_before_ns,
                            SignatureHash(a), &a, h.slot});
    }
    cs.folder->Fold(cs.entries.data(), cs.entries.size());
    held -= group.size();
    cs.pending.pop_front();
    cs.folded_below = ++cs.base;
  }
}

Report AnalysisStream::Finish() {
  State& s = *state_;
  for (size_t c = 0; c < s.comms.size(); ++c) s.FoldComm(c, true);
  return ReportOf(s.ranks, s.comms, s.options);
}

}  // namespace analysis
}  // namespace xtimer

#include "analysis/comm_index.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace xtimer {
namespace analysis {
namespace {

// Comm id -> CommView index, with a small cache: a rank's arrivals cycle through few comms.
class CommMap {
 public:
  explicit CommMap(std::vector<CommView>* comms) : comms_(comms) {}

  CommView& Get(uint64_t id) {
    for (const auto& c : cache_) {
      if (c.first == id && c.second != kNone) return (*comms_)[c.second];
    }
    auto it = index_.find(id);
    uint32_t i;
    if (it != index_.end()) {
      i = it->second;
    } else {
      i = static_cast<uint32_t>(comms_->size());
      index_.emplace(id, i);
      comms_->emplace_back();
      comms_->back().id = id;
    }
    cache_[next_] = {id, i};
    next_ = (next_ + 1) % kCache;
    return (*comms_)[i];
  }

 private:
  static constexpr uint32_t kNone = ~0u;
  static constexpr int kCache = 4;
  std::vector<CommView>* comms_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::pair<uint64_t, uint32_t> cache_[kCache] = {{0, kNone}, {0, kNone}, {0, kNone}, {0, kNone}};
  int next_ = 0;
};

uint32_t SlotOf(CommView* comm, uint32_t input) {
  if (comm->inputs.empty() || comm->inputs.back() != input) comm->inputs.push_back(input);
  return static_cast<uint32_t>(comm->inputs.size() - 1);
}

// Sorts by (seq, slot). Entries arrive grouped by slot ascending, so a stable counting sort by
// seq suffices when the seqs are dense; otherwise a comparison sort. `scratch` is reused across
// communicators.
void SortEntries(std::vector<CommEntry>* entries, std::vector<CommEntry>* scratch,
                 std::vector<uint32_t>* start) {
  if (entries->size() < 2) return;
  uint64_t lo = entries->front().seq, hi = lo;
  for (const CommEntry& e : *entries) {
    lo = std::min(lo, e.seq);
    hi = std::max(hi, e.seq);
  }
  if (hi - lo >= 2 * entries->size() + 1024) {
    std::stable_sort(entries->begin(), entries->end(),
                     [](const CommEntry& a, const CommEntry& b) { return a.seq < b.seq; });
    return;
  }
  uint64_t range = hi - lo + 1;
  start->assign(range + 1, 0);
  for (const CommEntry& e : *entries) ++(*start)[e.seq - lo + 1];
  for (uint64_t i = 1; i <= range; ++i) (*start)[i] += (*start)[i - 1];
  if (scratch->size() < entries->size()) scratch->resize(entries->size());
  for (const CommEntry& e : *entries) (*scratch)[(*start)[e.seq - lo]++] = e;
  std::copy(scratch->begin(), scratch->begin() + entries->size(), entries->begin());
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

}  // namespace

uint64_t SignatureHash(const Arrival& a) {
  uint64_t h = Mix(0, a.op);
  h = Mix(h, a.dtype);
  h = Mix(h, a.count);
  return Mix(h, static_cast<uint32_t>(a.root));
}

std::vector<CommView> CommsOf(const std::vector<RankInput>& ranks,
                              const std::vector<std::vector<ArrivalComm>>& arrival_comms) {
  std::vector<CommView> comms;
  CommMap map(&comms);
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const RankInput& in = ranks[r];
    for (const Communicator& c : in.comms) {
      CommView& v = map.Get(c.id);
      SlotOf(&v, r);
      v.size = std::max(v.size, c.size);
      if (!c.members.empty() && v.known_members.size() < c.members.size()) {
        v.known_members = c.members;
      }
    }
    for (const Progress& p : in.progress) SlotOf(&map.Get(p.comm_id), r);
    if (r >= arrival_comms.size()) continue;
    for (const ArrivalComm& a : arrival_comms[r]) {
      CommView& v = map.Get(a.comm_id);
      SlotOf(&v, r);
      if (a.comm_size > v.size) v.size = a.comm_size;
    }
  }
  for (CommView& v : comms) {
    v.size = std::max<int32_t>(v.size, static_cast<int32_t>(v.inputs.size()));
  }
  std::sort(comms.begin(), comms.end(),
            [](const CommView& a, const CommView& b) { return a.id < b.id; });
  return comms;
}

size_t CommIndexOf(const std::vector<CommView>& comms, uint64_t id) {
  auto it = std::lower_bound(comms.begin(), comms.end(), id,
                             [](const CommView& c, uint64_t v) { return c.id < v; });
  return it != comms.end() && it->id == id ? static_cast<size_t>(it - comms.begin())
                                           : comms.size();
}

namespace {

// Each rank's communicators with arrivals (in first-seen order, each once), for CommsOf.
std::vector<std::vector<ArrivalComm>> ArrivalCommsOf(const std::vector<RankInput>& ranks) {
  std::vector<std::vector<ArrivalComm>> out(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<ArrivalComm>& mine = out[r];
    size_t last = 0;
    for (const Arrival& a : ranks[r].arrivals) {
      if (last >= mine.size() || mine[last].comm_id != a.comm_id) {
        last = 0;
        while (last < mine.size() && mine[last].comm_id != a.comm_id) ++last;
        if (last == mine.size()) mine.push_back({a.comm_id, 0, 0});
      }
      mine[last].comm_size = std::max(mine[last].comm_size, a.comm_size);
      ++mine[last].count;
    }
  }
  return out;
}

// CommIndexOf with a small cache: a rank's arrivals cycle through few communicators.
class CommFinder {
 public:
  explicit CommFinder(const std::vector<CommView>& comms) : comms_(comms) {}
  size_t Of(uint64_t id) {
    for (size_t i : recent_) {
      if (i < comms_.size() && comms_[i].id == id) return i;
    }
    const size_t i = CommIndexOf(comms_, id);
    recent_[next_] = i;
    next_ = (next_ + 1) % kRecent;
    return i;
  }

 private:
  static constexpr size_t kRecent = 4;
  const std::vector<CommView>& comms_;
  size_t recent_[kRecent] = {~size_t{0}, ~size_t{0}, ~size_t{0}, ~size_t{0}};
  size_t next_ = 0;
};

// The entries of every communicator, in rank order, then sorted by (seq, slot).
void FillEntries(const std::vector<RankInput>& ranks,
                 const std::vector<std::vector<ArrivalComm>>& arrival_comms,
                 std::vector<CommView>* comms) {
  std::vector<size_t> counts(comms->size(), 0);
  for (const std::vector<ArrivalComm>& mine : arrival_comms) {
    for (const ArrivalComm& a : mine) counts[CommIndexOf(*comms, a.comm_id)] += a.count;
  }
  for (size_t i = 0; i < comms->size(); ++i) (*comms)[i].entries.reserve(counts[i]);
  CommFinder find(*comms);
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    for (const Arrival& a : ranks[r].arrivals) {
      CommView& v = (*comms)[find.Of(a.comm_id)];
      uint32_t slot = static_cast<uint32_t>(
          std::lower_bound(v.inputs.begin(), v.inputs.end(), r) - v.inputs.begin());
      v.entries.push_back({a.seq, a.start_ns, a.end_ns, a.busy_before_ns, a.idle_before_ns,
                           SignatureHash(a), &a, slot});
    }
  }
  std::vector<CommEntry> scratch;
  std::vector<uint32_t> start;
  for (CommView& v : *comms) SortEntries(&v.entries, &scratch, &start);
}

// Folds a communicator's sorted entries, instance by instance, and frees them.
void FoldEntries(const std::vector<RankInput>& ranks, const Options& options,
                 const std::vector<HostIndex>& hosts, CommView* v) {
  std::vector<uint64_t> last(v->inputs.size(), 0);
  std::vector<uint8_t> has(v->inputs.size(), 0);
  for (const CommEntry& e : v->entries) {
    last[e.slot] = std::max(last[e.slot], e.seq);
    has[e.slot] = 1;
  }
  v->facts.keep_seqs = SeqsToKeep(*v, ranks, last, has);
  InstanceFolder folder(v, options, hosts.empty() ? nullptr : &hosts);
  const std::vector<CommEntry>& e = v->entries;
  for (size_t i = 0; i < e.size();) {
    size_t j = i + 1;
    while (j < e.size() && e[j].seq == e[i].seq) ++j;
    folder.Fold(&e[i], j - i);
    i = j;
  }
  std::vector<CommEntry>().swap(v->entries);
}

}  // namespace

std::vector<CommView> IndexComms(const std::vector<RankInput>& ranks, const Options& options) {
  const std::vector<std::vector<ArrivalComm>> arrival_comms = ArrivalCommsOf(ranks);
  std::vector<CommView> comms = CommsOf(ranks, arrival_comms);
  FillEntries(ranks, arrival_comms, &comms);
  const std::vector<HostIndex> hosts = HostIndexes(ranks);
  for (CommView& v : comms) FoldEntries(ranks, options, hosts, &v);
  return comms;
}

std::vector<int32_t> MemberRanks(const CommView& comm, const std::vector<RankInput>& ranks) {
  std::vector<int32_t> out;
  bool known = !comm.known_members.empty() &&
               std::find(comm.known_members.begin(), comm.known_members.end(), -1) ==
                   comm.known_members.end();
  if (known) {
    out = comm.known_members;
  } else {
    for (uint32_t i : comm.inputs) out.push_back(ranks[i].rank);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Progress* FindProgress(const RankInput& rank, uint64_t comm_id) {
  for (const Progress& p : rank.progress) {
    if (p.comm_id == comm_id) return &p;
  }
  return nullptr;
}

}  // namespace analysis
}  // namespace xtimer

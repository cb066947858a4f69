#include "daemon/dumps/anomaly.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

using format::OpKind;

bool AnomalyDetector::Key::operator==(const Key& o) const {
  return op == o.op && dtype == o.dtype && comm_size == o.comm_size && m == o.m && n == o.n &&
         k == o.k && batch == o.batch && bytes == o.bytes;
}

size_t AnomalyDetector::KeyHash::operator()(const Key& k) const {
  uint64_t h = (uint64_t{k.op} << 40) ^ (uint64_t{k.dtype} << 32) ^ static_cast<uint32_t>(k.comm_size);
  for (uint64_t v : {static_cast<uint64_t>(k.m), static_cast<uint64_t>(k.n),
                     static_cast<uint64_t>(k.k), static_cast<uint64_t>(k.batch), k.bytes}) {
    h = (h ^ v) * 0x100000001b3ULL + (h >> 29);
  }
  return static_cast<size_t>(h);
}

size_t AnomalyDetector::PairHash::operator()(const PairKey& k) const {
  return static_cast<size_t>((k.first * 0x9e3779b97f4a7c15ULL) ^ (k.second + (k.first >> 17)));
}

AnomalyDetector::AnomalyDetector(const AnomalyOptions& options) : options_(options) {}

// A collective: judged with the other members of its (comm_id, seq) on this node. A p2p op's
// sequence number is per peer pair, and the record does not say which member it is, so p2p ops
// are judged alone.
bool AnomalyDetector::IsInstance(const format::OpRecord& r) {
  return r.kind == static_cast<uint8_t>(OpKind::kCollective) && r.comm_id != 0 && r.seq != 0;
}

int64_t AnomalyDetector::Held::latest_start_ns() const {
  return next_launch_ns == INT64_MAX ? r.gpu_start_ns : std::max(r.gpu_start_ns, next_launch_ns);
}

void AnomalyDetector::Bound(Member* m, const format::OpRecord& r, Held* h,
                            std::vector<uint64_t>* bounded) {
  for (int64_t launch : m->recent) {  // issued later, completed first (another stream)
    if (launch > r.cpu_launch_ns) h->next_launch_ns = std::min(h->next_launch_ns, launch);
  }
  // The member's open ops (the last held one of each stream): their N tightens until their
  // stream's next op arrives, which closes them.
  for (auto it = m->open.begin(); it != m->open.end();) {
    Held& p = held_.at(*it);
    if (r.cpu_launch_ns > p.r.cpu_launch_ns) {
      p.next_launch_ns = std::min(p.next_launch_ns, r.cpu_launch_ns);
    }
    if (p.r.stream != r.stream) {
      ++it;
      continue;
    }
    p.bounded = true;
    bounded->push_back(*it);
    it = m->open.erase(it);
  }
  if (m->recent.size() < kRecent) {
    m->recent.push_back(r.cpu_launch_ns);
  } else {
    m->recent[m->pos] = r.cpu_launch_ns;
    m->pos = (m->pos + 1) % kRecent;
  }
}

void AnomalyDetector::Add(uint64_t member, const format::OpRecord& r, int64_t now_ns,
                          std::vector<AnomalyDecision>* decided) {
  if (r.kind == static_cast<uint8_t>(OpKind::kHostSync)) {
    // The host's wait for the GPU's backlog: how early the host was, not work. Not judged (the
    // GPU ops it waited for are).
    decided->push_back({r, member, AnomalyVerdict{}});
    return;
  }
  Member& m = members_[member];
  Held h;
  h.r = r;
  h.member = member;
  h.arrived_ns = now_ns;
  std::vector<uint64_t> bounded;
  Bound(&m, r, &h, &bounded);
  const uint64_t id = next_id_++;
  held_.emplace(id, h);
  m.open.push_back(id);
  if (IsInstance(r)) {
    instances_[{r.comm_id, r.seq}].push_back(id);
    auto c = comm_members_.find(r.comm_id);
    if (c == comm_members_.end() && comm_members_.size() < options_.max_comms) {
      c = comm_members_.emplace(r.comm_id, LocalMembers{}).first;
    }
    if (c != comm_members_.end() &&
        std::find(c->second.seen.begin(), c->second.seen.end(), member) == c->second.seen.end() &&
        c->second.seen.size() < static_cast<size_t>(std::max(r.comm_size, 1))) {
      c->second.seen.push_back(member);
    }
  }
  for (uint64_t b : bounded) TryDecide(b, false, decided);
  while (held_.size() > options_.max_held) TryDecide(held_.begin()->first, true, decided);
}

void AnomalyDetector::Expire(int64_t now_ns, bool all, std::vector<AnomalyDecision>* decided) {
  while (!held_.empty() &&
         (all || held_.begin()->second.arrived_ns + options_.hold_ns <= now_ns)) {
    TryDecide(held_.begin()->first, true, decided);
  }
}

void AnomalyDetector::TryDecide(uint64_t id, bool force, std::vector<AnomalyDecision>* decided) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  const Held& h = it->second;
  if (!IsInstance(h.r)) {
    if (!h.bounded && !force) return;
    Decide(h, h.latest_start_ns(), h.exact(), decided);
    Forget(id);
    return;
  }
  const PairKey instance{h.r.comm_id, h.r.seq};
  if (!force) {
    const std::vector<uint64_t>& ids = instances_[instance];
    auto c = comm_members_.find(h.r.comm_id);
    const size_t members = c == comm_members_.end() ? 1
                           : c->second.learned      ? c->second.seen.size()
                                                    : static_cast<size_t>(h.r.comm_size);
    if (ids.size() < members) return;
    for (uint64_t m : ids) {
      if (!held_.at(m).bounded) return;
    }
  }
  DecideInstance(instance, force, decided);
}

// Every member's transfer began at the latest L of the instance's members: the judged time of
// each is its end minus that; exact when that latest L is a start event's (the member arrived
// with its launch already queued).
void AnomalyDetector::DecideInstance(const PairKey& instance, bool forced,
                                     std::vector<AnomalyDecision>* decided) {
  auto in = instances_.find(instance);
  if (in == instances_.end()) return;
  auto c = comm_members_.find(instance.first);
  if (forced && c != comm_members_.end()) c->second.learned = true;
  const std::vector<uint64_t> ids = std::move(in->second);
  instances_.erase(in);
  int64_t latest = INT64_MIN;
  bool exact = false;
  for (uint64_t id : ids) {
    const Held& h = held_.at(id);
    if (h.latest_start_ns() > latest) {
      latest = h.latest_start_ns();
      exact = h.exact();
    }
  }
  for (uint64_t id : ids) {
    Decide(held_.at(id), latest, exact, decided);
    Forget(id);
  }
}

void AnomalyDetector::Decide(const Held& h, int64_t latest_start_ns, bool exact,
                             std::vector<AnomalyDecision>* decided) {
  const int64_t end = h.r.gpu_start_ns + h.r.duration_ns;
  const int64_t judged = std::max<int64_t>(0, end - latest_start_ns);
  decided->push_back({h.r, h.member, Judge(h.r, judged, exact)});
}

void AnomalyDetector::Forget(uint64_t id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  auto m = members_.find(it->second.member);
  if (m != members_.end()) {
    std::vector<uint64_t>& ids = m->second.open;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  }
  held_.erase(it);
}

AnomalyVerdict AnomalyDetector::Judge(const format::OpRecord& r, int64_t judged_ns, bool exact) {
  AnomalyVerdict v;
  v.judged_ns = judged_ns;
  v.exact = exact;
  const Key key{r.op, r.dtype, r.comm_size, r.m, r.n, r.k, r.batch, r.bytes};
  auto it = signatures_.find(key);
  if (it == signatures_.end()) {
    if (signatures_.size() >= options_.max_signatures) {
      ++untracked_;
      return v;
    }
    it = signatures_.emplace(key, Durations{}).first;
    it->second.ring.reserve(options_.window);
  }
  Durations& d = it->second;
  if (d.ring.size() >= options_.min_samples) {
    scratch_.assign(d.ring.begin(), d.ring.end());
    auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
    std::nth_element(scratch_.begin(), mid, scratch_.end());
    v.median_ns = *mid;
    v.samples = scratch_.size();
    v.anomalous = v.median_ns > 0 && static_cast<double>(judged_ns) >
                                         options_.factor * static_cast<double>(v.median_ns);
  }
  if (!exact) return v;
  if (d.ring.size() < options_.window) {
    d.ring.push_back(judged_ns);
  } else {
    d.ring[d.next] = judged_ns;
    d.next = (d.next + 1) % options_.window;
  }
  return v;
}

}  // namespace daemon
}  // namespace xtimer

#include "analysis/instance_fold.h"

#include <algorithm>

#include "analysis/comm_index.h"
#include "analysis/passes.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace analysis {

double Median(std::vector<double>* v) {
  if (v->empty()) return 0;
  size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  double hi = (*v)[mid];
  if (v->size() % 2) return hi;
  double lo = *std::max_element(v->begin(), v->begin() + mid);
  return (lo + hi) / 2;
}

double Median(std::vector<int64_t>* v) {
  if (v->empty()) return 0;
  size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  double hi = static_cast<double>((*v)[mid]);
  if (v->size() % 2) return hi;
  double lo = static_cast<double>(*std::max_element(v->begin(), v->begin() + mid));
  return (lo + hi) / 2;
}

std::vector<uint64_t> SeqsToKeep(const CommView& comm, const std::vector<RankInput>& ranks,
                                 const std::vector<uint64_t>& last_seq,
                                 const std::vector<uint8_t>& has_last) {
  std::vector<uint64_t> seqs;
  for (size_t slot = 0; slot < comm.inputs.size(); ++slot) {
    const Progress* p = FindProgress(ranks[comm.inputs[slot]], comm.id);
    if (p == nullptr) continue;
    if (p->has_inflight) seqs.push_back(p->inflight.seq);
    const uint64_t last = has_last[slot] ? last_seq[slot] : 0;
    seqs.push_back(std::max(last, p->last_completed_seq) + 1);
  }
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  return seqs;
}

InstanceFolder::InstanceFolder(CommView* comm, const Options& options,
                               const std::vector<HostIndex>* hosts)
    : comm_(comm), hosts_(hosts), facts_(&comm->facts) {
  const size_t members = comm->inputs.size();
  std::vector<uint64_t> keep = std::move(facts_->keep_seqs);
  *facts_ = CommFacts();
  facts_->keep_seqs = std::move(keep);
  facts_->last_completed.assign(members, 0);
  facts_->has_completed.assign(members, 0);
  facts_->sums.slots.resize(members);
  const size_t required =
      options.partial_instances ? members : static_cast<size_t>(std::max(comm->size, 0));
  if (required >= 2 && members >= required) required_ = required;
  stamp_.assign(members, ~uint64_t{0});
}

void InstanceFolder::Fold(const CommEntry* e, size_t n) {
  if (n == 0) return;
  const uint64_t seq = e[0].seq;
  int64_t end = 0;
  bool bad = false;
  for (size_t k = 0; k < n; ++k) {
    end = std::max(end, e[k].end_ns);
    facts_->last_end = std::max(facts_->last_end, e[k].end_ns);
    facts_->last_completed[e[k].slot] = std::max(facts_->last_completed[e[k].slot], seq);
    facts_->has_completed[e[k].slot] = 1;
    bad |= e[k].signature != e[0].signature;
  }
  if (end > 0) facts_->instance_ends.push_back(end);
  ++facts_->instances;
  auto keep = [&](std::vector<KeptArrival>* out) {
    for (size_t k = 0; k < n; ++k) out->push_back({e[k].slot, *e[k].arrival});
  };
  if (bad && facts_->bad_instances++ == 0) keep(&facts_->first_bad);
  if (std::binary_search(facts_->keep_seqs.begin(), facts_->keep_seqs.end(), seq)) {
    keep(&facts_->kept[seq]);
  }
  if (required_ != 0 && n == required_ && Distinct(e, n)) Sums(e, n);
}

bool InstanceFolder::Distinct(const CommEntry* e, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (stamp_[e[k].slot] == e[0].seq) return false;
    stamp_[e[k].slot] = e[0].seq;
  }
  return true;
}

SigSums& InstanceFolder::SigOf(const Arrival& a) {
  CommSums& sums = facts_->sums;
  for (SigSums& s : sums.sigs) {
    if (s.op == a.op && s.bytes == a.bytes) return s;
  }
  sums.sigs.emplace_back();
  SigSums& s = sums.sigs.back();
  s.op = a.op;
  s.bytes = a.bytes;
  s.bus_bytes = opmath::BusBytes(a.op, a.bytes, comm_->size);
  s.own.assign(sums.slots.size(), 0);
  s.own_instances.assign(sums.slots.size(), 0);
  return s;
}

// A complete instance: who arrived last, the waits, the transfer time.
void InstanceFolder::Sums(const CommEntry* e, size_t n) {
  CommSums& sums = facts_->sums;
  starts_.clear();
  ends_.clear();
  int64_t last = e[0].start_ns;
  uint32_t last_slot = e[0].slot;
  size_t last_k = 0;
  for (size_t k = 0; k < n; ++k) {
    starts_.push_back(e[k].start_ns);
    ends_.push_back(e[k].end_ns);
    sums.first_start = std::min(sums.first_start, e[k].start_ns);
    sums.last_end = std::max(sums.last_end, e[k].end_ns);
    if (e[k].start_ns > last) {
      last = e[k].start_ns;
      last_slot = e[k].slot;
      last_k = k;
    }
  }
  double median_start = Median(&starts_);
  double transfer = std::max(0.0, Median(&ends_) - static_cast<double>(last));
  SigSums& sig = SigOf(*e[0].arrival);
  sig.transfers.push_back(transfer);
  double caused = 0;
  for (size_t k = 0; k < n; ++k) {
    const CommEntry& a = e[k];
    SlotSums& s = sums.slots[a.slot];
    double wait = static_cast<double>(last - a.start_ns);
    ++s.instances;
    s.lateness += a.start_ns - median_start;
    s.wait += wait;
    s.transfer += transfer;
    s.busy += a.busy_ns;
    s.idle += a.idle_ns;
    caused += wait;
    sig.own[a.slot] += static_cast<double>(a.end_ns - a.start_ns);
    ++sig.own_instances[a.slot];
  }
  sums.slots[last_slot].last++;
  sums.slots[last_slot].wait_caused += caused;
  sums.transfer += transfer;
  ++sums.instances;
  CreditHost(e[last_k]);
}

// The last member's idle time before this arrival, and its host spans' credit in it.
void InstanceFolder::CreditHost(const CommEntry& last) {
  SlotSums& s = facts_->sums.slots[last.slot];
  s.late_idle += static_cast<double>(last.idle_ns);
  if (hosts_ == nullptr || last.arrival->gap_begin_ns <= 0) return;
  const uint32_t input = comm_->inputs[last.slot];
  if (input >= hosts_->size()) return;
  (*hosts_)[input].Credit(last.arrival->gap_begin_ns, last.start_ns, last.idle_ns, &s.host,
                          &edges_);
}

}  // namespace analysis
}  // namespace xtimer

// SummarizeRank and RankSummarizer: one rank's timed ops reduced to Arrivals of its collectives.
#include <algorithm>
#include <limits>
#include <utility>

#include "analysis/analysis.h"
#include "format/record.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr size_t kDefaultPendingWork = 4096;

uint8_t KindOf(const TimedOp& op) {
  return op.kind != 0 ? op.kind : format::KindOfOperation(op.op);
}

Arrival ArrivalOf(const TimedOp& op) {
  Arrival a;
  a.comm_id = op.comm_id;
  a.seq = op.seq;
  a.count = op.count;
  a.bytes = op.bytes;
  a.op = op.op;
  a.dtype = op.dtype;
  a.state = OpState::kCompleted;
  a.root = op.root;
  a.comm_size = op.comm_size;
  a.issue_ns = op.issue_ns;
  a.start_ns = op.start_ns;
  a.end_ns = op.start_ns + op.duration_ns;
  return a;
}

// SummarizeRank's order: completion order, work before a collective that ends at the same time.
bool CompletesBefore(const TimedOp& a, const TimedOp& b) {
  const int64_t ea = a.start_ns + a.duration_ns, eb = b.start_ns + b.duration_ns;
  if (ea != eb) return ea < eb;
  const uint8_t collective = static_cast<uint8_t>(format::OpKind::kCollective);
  return KindOf(a) != collective && KindOf(b) == collective;
}

}  // namespace

struct RankSummarizer::State {
  // A span of the rank's GPU time that may still precede a later collective (it ended after the
  // last collective's end). Point-to-point ops (pipeline send/receive) occupy the GPU but are
  // not the rank's own work: they mostly wait on a peer.
  struct Span {
    int64_t start;
    int64_t end;
    bool p2p;
    bool operator<(const Span& o) const { return start != o.start ? start < o.start : end < o.end; }
  };
  size_t max_pending = kDefaultPendingWork;
  std::vector<Span> work;
  bool sorted = true;  // `work` in Span order (ops mostly arrive so: no sort per collective)
  bool has_collective = false;
  int64_t last_collective_end = 0;

  // Within [begin, end]: the union length of the own work (`*busy`) and of all spans, send and
  // receive included (`*occupied`). Sorts `work` in place when it is not sorted yet.
  void Within(int64_t begin, int64_t end, int64_t* busy, int64_t* occupied) {
    Sort();
    *busy = *occupied = 0;
    int64_t busy_to = begin, occupied_to = begin;  // counted up to these times
    for (const Span& w : work) {
      const int64_t e = std::min(w.end, end);
      if (!w.p2p) Cover(w.start, e, &busy_to, busy);
      Cover(w.start, e, &occupied_to, occupied);
    }
  }

  static void Cover(int64_t start, int64_t end, int64_t* covered, int64_t* length) {
    const int64_t s = std::max(start, *covered);
    if (end > s) {
      *length += end - s;
      *covered = end;
    }
  }

  void Sort() {
    if (!sorted) std::sort(work.begin(), work.end());
    sorted = true;
  }

  void DropBefore(int64_t t) {  // keeps the order
    work.erase(std::remove_if(work.begin(), work.end(), [t](const Span& w) { return w.end <= t; }),
               work.end());
  }

  void AddWork(int64_t start, int64_t end, bool p2p) {
    if (work.size() >= max_pending) {
      // Keep the newer half: the oldest work is the least likely to precede the next collective.
      Sort();
      work.erase(work.begin(), work.begin() + work.size() / 2 + 1);
    }
    const Span s{start, end, p2p};
    if (!work.empty() && s < work.back()) sorted = false;
    work.push_back(s);
  }
};

RankSummarizer::RankSummarizer() : RankSummarizer(kDefaultPendingWork) {}

RankSummarizer::RankSummarizer(size_t max_pending_work) : state_(new State) {
  state_->max_pending = std::max<size_t>(max_pending_work, 2);
}

RankSummarizer::~RankSummarizer() { delete state_; }

bool IsArrival(uint16_t op, uint8_t kind, int64_t start_ns, int64_t duration_ns) {
  if (kind == 0) kind = format::KindOfOperation(op);
  return kind == static_cast<uint8_t>(format::OpKind::kCollective) && start_ns > 0 &&
         duration_ns >= 0;
}

bool IsArrival(const TimedOp& op) {
  return IsArrival(op.op, op.kind, op.start_ns, op.duration_ns);
}

bool RankSummarizer::Add(const TimedOp& op, Arrival* arrival) {
  uint8_t kind = KindOf(op);
  if (kind == static_cast<uint8_t>(format::OpKind::kHostSync) || kind == 0) return false;
  if (op.start_ns <= 0 || op.duration_ns < 0) return false;  // never reached the GPU
  int64_t end = op.start_ns + op.duration_ns;
  if (!IsArrival(op)) {
    state_->AddWork(op.start_ns, end, kind == static_cast<uint8_t>(format::OpKind::kP2P));
    return false;
  }
  *arrival = ArrivalOf(op);
  // A collective without peers (tp 1's tensor-parallel all-reduce) waits on nobody: it is
  // the rank's own work, and the next collective's window starts at the previous one with peers
  // (else the GEMMs before it would not count for the data-parallel arrival a straggler is late
  // for, and the straggler would pass for a relay of someone else's delay). It has no arrival to
  // compare, so no busy or idle time of its own: measuring it scanned every op since the last
  // collective with peers (all of a world-1 job's ops) for each such collective.
  const bool alone = arrival->comm_size == 1;
  if (!alone && state_->has_collective && op.start_ns > state_->last_collective_end) {
    int64_t occupied = 0;
    state_->Within(state_->last_collective_end, op.start_ns, &arrival->busy_before_ns, &occupied);
    arrival->idle_before_ns = op.start_ns - state_->last_collective_end - occupied;
    arrival->gap_begin_ns = state_->last_collective_end;
  }
  if (alone && state_->has_collective) {
    state_->AddWork(op.start_ns, end, /*p2p=*/false);
    return true;
  }
  if (!state_->has_collective || end > state_->last_collective_end) {
    state_->last_collective_end = end;
  }
  state_->has_collective = true;
  state_->DropBefore(state_->last_collective_end);
  return true;
}

OrderedRankSummarizer::OrderedRankSummarizer(size_t window)
    // Offline every op is kept until the next collective (no dropped work): memory is bounded
    // by the ops between two collectives.
    : window_(std::max<size_t>(window, 1)), summarizer_(std::numeric_limits<size_t>::max()) {}

OrderedRankSummarizer::~OrderedRankSummarizer() = default;

void OrderedRankSummarizer::AddBlock(std::vector<TimedOp>* block) {
  if (block->empty()) return;
  if (!std::is_sorted(block->begin(), block->end(), CompletesBefore)) {
    std::stable_sort(block->begin(), block->end(), CompletesBefore);
  }
  const size_t mid = held_.size();
  const bool in_order = held_.empty() || !CompletesBefore(block->front(), held_.back());
  held_.insert(held_.end(), block->begin(), block->end());
  block->clear();
  if (!in_order) std::inplace_merge(held_.begin(), held_.begin() + mid, held_.end(),
                                    CompletesBefore);
  if (emitted_ && CompletesBefore(held_.front(), last_emitted_)) in_order_ = false;
  // Summarise in batches of a window, so that each op is moved about once.
  if (held_.size() >= 2 * window_) Emit(held_.size() - window_);
}

void OrderedRankSummarizer::Emit(size_t n) {
  if (n == 0) return;
  Arrival a;
  for (size_t i = 0; i < n; ++i) {
    if (summarizer_.Add(held_[i], &a)) arrivals_.push_back(a);
  }
  emitted_ = true;
  last_emitted_ = held_[n - 1];
  held_.erase(held_.begin(), held_.begin() + n);
}

void OrderedRankSummarizer::Drain(std::vector<Arrival>* out, bool all) {
  if (all) Emit(held_.size());
  if (out->empty()) {
    out->swap(arrivals_);
  } else {
    out->insert(out->end(), arrivals_.begin(), arrivals_.end());
  }
  arrivals_.clear();
}

std::vector<Arrival> OrderedRankSummarizer::Finish() {
  Emit(held_.size());
  auto by_start = [](const Arrival& x, const Arrival& y) { return x.start_ns < y.start_ns; };
  if (!std::is_sorted(arrivals_.begin(), arrivals_.end(), by_start)) {
    std::stable_sort(arrivals_.begin(), arrivals_.end(), by_start);
  }
  return std::move(arrivals_);
}

std::vector<Arrival> SummarizeRank(std::vector<TimedOp> ops) {
  OrderedRankSummarizer summarizer(ops.size());  // one window: everything sorted at once
  summarizer.AddBlock(&ops);
  return summarizer.Finish();
}

}  // namespace analysis
}  // namespace xtimer

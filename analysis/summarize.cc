// SummarizeRank and RankSummarizer: one rank's timed ops reduced to Arrivals of its collectives.
#include <algorithm>
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

}  // namespace

struct RankSummarizer::State {
  size_t max_pending = kDefaultPendingWork;
  // GPU work (start, end) that may still precede a later collective: everything that ended after
  // the last collective's end.
  std::vector<std::pair<int64_t, int64_t>> work;
  bool has_collective = false;
  int64_t last_collective_end = 0;

  // Union length of the work intervals clipped to [begin, end]. Sorts `work` in place.
  int64_t BusyWithin(int64_t begin, int64_t end) {
    std::sort(work.begin(), work.end());
    int64_t busy = 0;
    int64_t covered = begin;  // everything before `covered` is counted
    for (const auto& w : work) {
      int64_t s = std::max(w.first, covered);
      int64_t e = std::min(w.second, end);
      if (e > s) {
        busy += e - s;
        covered = e;
      }
    }
    return busy;
  }

  void DropBefore(int64_t t) {
    work.erase(std::remove_if(work.begin(), work.end(),
                              [t](const std::pair<int64_t, int64_t>& w) { return w.second <= t; }),
               work.end());
  }

  void AddWork(int64_t start, int64_t end) {
    if (work.size() >= max_pending) {
      // Keep the newer half: the oldest work is the least likely to precede the next collective.
      std::sort(work.begin(), work.end());
      work.erase(work.begin(), work.begin() + work.size() / 2 + 1);
    }
    work.emplace_back(start, end);
  }
};

RankSummarizer::RankSummarizer() : RankSummarizer(kDefaultPendingWork) {}

RankSummarizer::RankSummarizer(size_t max_pending_work) : state_(new State) {
  state_->max_pending = std::max<size_t>(max_pending_work, 2);
}

RankSummarizer::~RankSummarizer() { delete state_; }

bool RankSummarizer::Add(const TimedOp& op, Arrival* arrival) {
  uint8_t kind = KindOf(op);
  if (kind == static_cast<uint8_t>(format::OpKind::kHostSync) || kind == 0) return false;
  if (op.start_ns <= 0 || op.duration_ns < 0) return false;  // never reached the GPU
  int64_t end = op.start_ns + op.duration_ns;
  if (kind != static_cast<uint8_t>(format::OpKind::kCollective)) {
    state_->AddWork(op.start_ns, end);
    return false;
  }
  *arrival = ArrivalOf(op);
  if (state_->has_collective && op.start_ns > state_->last_collective_end) {
    int64_t window = op.start_ns - state_->last_collective_end;
    arrival->busy_before_ns = state_->BusyWithin(state_->last_collective_end, op.start_ns);
    arrival->idle_before_ns = window - arrival->busy_before_ns;
  }
  if (!state_->has_collective || end > state_->last_collective_end) {
    state_->last_collective_end = end;
  }
  state_->has_collective = true;
  state_->DropBefore(state_->last_collective_end);
  return true;
}

std::vector<Arrival> SummarizeRank(std::vector<TimedOp> ops) {
  // Completion order, work before a collective that ends at the same time.
  auto end_of = [](const TimedOp& o) { return o.start_ns + o.duration_ns; };
  auto is_collective = [](const TimedOp& o) {
    return KindOf(o) == static_cast<uint8_t>(format::OpKind::kCollective);
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const TimedOp& a, const TimedOp& b) {
    int64_t ea = end_of(a), eb = end_of(b);
    if (ea != eb) return ea < eb;
    return !is_collective(a) && is_collective(b);
  });
  RankSummarizer summarizer(ops.size() + 2);
  std::vector<Arrival> arrivals;
  Arrival a;
  for (const TimedOp& op : ops) {
    if (summarizer.Add(op, &a)) arrivals.push_back(a);
  }
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const Arrival& x, const Arrival& y) { return x.start_ns < y.start_ns; });
  return arrivals;
}

}  // namespace analysis
}  // namespace xtimer

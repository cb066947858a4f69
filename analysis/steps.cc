#include "analysis/steps.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <tuple>
#include <utility>

namespace xtimer {
namespace analysis {
namespace {

// A period must repeat the operations on at least this share of the collective pairs it spans,
// and this share of its durations must lie within kSpread of their median.
constexpr double kSameOps = 0.9;
constexpr double kConsistent = 0.97;
constexpr double kSpread = 0.25;
// Of each communicator, the newest collectives looked at.
constexpr size_t kMaxCallsPerComm = 4096;
// A multiple of the shortest consistent period is the step instead when its durations are this
// much tighter (p10 to p90 over the median): the shortest period then alternates, as two equal
// collectives of a step at unequal distances do. Independent jitter tightens a sum of k periods
// by 1/sqrt(k) only (0.5 at k = 4), so it never makes the choice; nor does a spread below
// kMinAlternation, which is jitter.
constexpr double kTighter = 0.25;
constexpr double kMinAlternation = 0.02;
constexpr size_t kMaxMultiple = 4;

struct Call {
  uint64_t seq;
  int64_t start_ns;
  std::tuple<uint16_t, uint64_t, uint8_t, int32_t> what;  // op, bytes, dtype, root
};

double Quantile(std::vector<int64_t>* v, double q) {
  size_t i = static_cast<size_t>(q * static_cast<double>(v->size() - 1));
  std::nth_element(v->begin(), v->begin() + i, v->end());
  return static_cast<double>((*v)[i]) * 1e-9;
}

// The intervals of `calls` (ascending, distinct seqs) from a call to the one `p` later: their
// durations in *d, the start's index in *from (when not null); returns how many repeat the op.
size_t Intervals(const std::vector<Call>& calls, size_t p, std::vector<int64_t>* d,
                 std::vector<size_t>* from = nullptr) {
  size_t same = 0;
  for (size_t i = 0, j = 0; i < calls.size(); ++i) {
    const uint64_t want = calls[i].seq + p;
    while (j < calls.size() && calls[j].seq < want) ++j;
    if (j == calls.size()) break;
    if (calls[j].seq != want) continue;
    same += calls[j].what == calls[i].what;
    d->push_back(calls[j].start_ns - calls[i].start_ns);
    if (from != nullptr) from->push_back(i);
  }
  return same;
}

// The step over period `p` of `calls` (ascending, distinct seqs), or not found.
StepGuess TryPeriod(const std::vector<Call>& calls, size_t p) {
  StepGuess g;
  std::vector<int64_t> d;
  const size_t same = Intervals(calls, p, &d);
  if (d.size() < kMinStepPeriods || static_cast<double>(same) < kSameOps * d.size()) return g;
  const double median = Quantile(&d, 0.5);
  if (!(median > 0)) return g;
  size_t near = 0;
  for (int64_t x : d) near += std::abs(static_cast<double>(x) * 1e-9 - median) <= kSpread * median;
  if (static_cast<double>(near) < kConsistent * d.size()) return g;
  g.per_step = p;
  g.periods = d.size();
  g.median_s = median;
  g.p10_s = Quantile(&d, 0.1);
  g.p90_s = Quantile(&d, 0.9);
  return g;
}

double RelativeSpread(const StepGuess& g) { return (g.p90_s - g.p10_s) / g.median_s; }

// Whether period `p`'s intervals alternate: those from calls an even and an odd number of
// periods past the first differ (medians) by more than twice the spread within either, and by at
// least kMinAlternation of the median: two equal collectives a step at unequal distances.
bool Alternates(const std::vector<Call>& calls, size_t p) {
  std::vector<int64_t> d, half[2];
  std::vector<size_t> from;
  Intervals(calls, p, &d, &from);
  for (size_t i = 0; i < d.size(); ++i) {
    half[((calls[from[i]].seq - calls.front().seq) / p) % 2].push_back(d[i]);
  }
  if (half[0].empty() || half[1].empty()) return false;
  double median[2], within = 0;
  for (int h = 0; h < 2; ++h) {
    const auto [lo, hi] = std::minmax_element(half[h].begin(), half[h].end());
    within = std::max(within, static_cast<double>(*hi - *lo) * 1e-9);
    median[h] = Quantile(&half[h], 0.5);
  }
  const double between = std::abs(median[0] - median[1]);
  return between > 2 * within && between >= kMinAlternation * Quantile(&d, 0.5);
}

// `g` (the shortest consistent period), or the smallest multiple of it, up to kMaxMultiple and
// `longest`, whose durations are kTighter as spread: the step when `g` alternates. A window too
// short to hold such multiples still shows an alternation (Alternates): then the step is twice
// `g` where the window holds kMinStepPeriods intervals of it (5 calls hold 3), else there is
// none: `g` would be half of one.
StepGuess TightestMultiple(const std::vector<Call>& calls, const StepGuess& g, size_t longest) {
  const double spread = RelativeSpread(g);
  for (size_t k = 2; spread >= kMinAlternation && k <= kMaxMultiple && k * g.per_step <= longest;
       ++k) {
    const StepGuess m = TryPeriod(calls, k * g.per_step);
    if (m.found() && RelativeSpread(m) < kTighter * spread) return m;
  }
  if (2 * g.per_step <= longest || !Alternates(calls, g.per_step)) return g;
  return TryPeriod(calls, 2 * g.per_step);
}

StepGuess GuessComm(std::vector<Call>* calls) {
  std::sort(calls->begin(), calls->end(),
            [](const Call& a, const Call& b) { return a.seq < b.seq; });
  calls->erase(std::unique(calls->begin(), calls->end(),
                           [](const Call& a, const Call& b) { return a.seq == b.seq; }),
               calls->end());
  // The newest kMaxCallsPerComm: a step's time now, and a bounded cost.
  if (calls->size() > kMaxCallsPerComm) calls->erase(calls->begin(), calls->end() - kMaxCallsPerComm);
  if (calls->size() < kMinStepPeriods + 1) return StepGuess();
  const uint64_t span = calls->back().seq - calls->front().seq;
  const size_t longest = static_cast<size_t>(
      std::min<uint64_t>(kMaxCollectivesPerStep, span / kMinStepPeriods));
  for (size_t p = 1; p <= longest; ++p) {
    StepGuess g = TryPeriod(*calls, p);
    if (g.found()) return TightestMultiple(*calls, g, longest);
  }
  return StepGuess();
}

}  // namespace

StepGuess GuessSteps(const std::vector<Arrival>& arrivals) {
  std::map<uint64_t, std::vector<Call>> by_comm;
  for (const Arrival& a : arrivals) {
    if (a.start_ns <= 0) continue;
    by_comm[a.comm_id].push_back({a.seq, a.start_ns, {a.op, a.bytes, a.dtype, a.root}});
  }
  StepGuess best;
  for (auto& kv : by_comm) {
    StepGuess g = GuessComm(&kv.second);
    if (!g.found()) continue;
    g.comm_id = kv.first;
    if (!best.found() || g.median_s > best.median_s) best = g;
  }
  return best;
}

std::vector<MarkedStep> MarkedSteps(std::vector<int64_t> marked_starts_ns) {
  std::sort(marked_starts_ns.begin(), marked_starts_ns.end());
  marked_starts_ns.erase(std::unique(marked_starts_ns.begin(), marked_starts_ns.end()),
                         marked_starts_ns.end());
  std::vector<MarkedStep> steps;
  for (size_t i = 1; i < marked_starts_ns.size(); ++i) {
    steps.push_back({marked_starts_ns[i - 1], marked_starts_ns[i]});
  }
  return steps;
}

std::vector<MarkedStep> GuessedSteps(const std::vector<Arrival>& arrivals, const StepGuess& g) {
  std::vector<MarkedStep> steps;
  if (!g.found()) return steps;
  std::map<uint64_t, int64_t> starts;  // seq -> GPU start
  for (const Arrival& a : arrivals) {
    if (a.comm_id == g.comm_id && a.start_ns > 0) starts.emplace(a.seq, a.start_ns);
  }
  if (starts.empty()) return steps;
  const uint64_t first = starts.begin()->first;
  for (const auto& [seq, start] : starts) {
    if ((seq - first) % g.per_step != 0) continue;
    auto next = starts.find(seq + g.per_step);
    if (next != starts.end() && next->second > start) steps.push_back({start, next->second});
  }
  return steps;
}

RankSteps StepsOf(std::vector<int64_t> marked_starts_ns, const std::vector<Arrival>& arrivals) {
  RankSteps s;
  std::vector<int64_t> marked_ns;
  for (const MarkedStep& m : MarkedSteps(std::move(marked_starts_ns))) {
    marked_ns.push_back(m.end_ns - m.begin_ns);
  }
  if (marked_ns.size() >= kMinStepPeriods) {
    s.marked = true;
    s.count = marked_ns.size();
    s.median_s = Quantile(&marked_ns, 0.5);
    s.p10_s = Quantile(&marked_ns, 0.1);
    s.p90_s = Quantile(&marked_ns, 0.9);
    return s;
  }
  s.guess = GuessSteps(arrivals);
  s.count = s.guess.periods;
  s.median_s = s.guess.median_s;
  s.p10_s = s.guess.p10_s;
  s.p90_s = s.guess.p90_s;
  return s;
}

std::vector<RankStepStats> MarkedStepStats(const std::vector<RankInput>& ranks) {
  std::vector<RankStepStats> out;
  for (const RankInput& r : ranks) {
    const RankSteps s = StepsOf(r.marked_step_starts_ns, {});
    if (!s.marked) continue;
    out.push_back({r.rank, s.count, s.median_s, s.p10_s, s.p90_s});
  }
  std::sort(out.begin(), out.end(),
            [](const RankStepStats& a, const RankStepStats& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace analysis
}  // namespace xtimer

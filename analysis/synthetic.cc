#include "analysis/synthetic.h"

#include <algorithm>
#include <random>

#include "format/record.h"

namespace xtimer {
namespace analysis {
namespace {

struct Layout {
  int tp, dp, pp;
  int TpGroup(int r) const { return r / tp; }  // one per (dp, pp)
  int DpGroup(int r) const { return (r % tp) + tp * (r / (tp * dp)); }
  std::vector<int32_t> TpMembers(int g) const {
    std::vector<int32_t> m;
    for (int i = 0; i < tp; ++i) m.push_back(g * tp + i);
    return m;
  }
  std::vector<int32_t> DpMembers(int g) const {
    int t = g % tp, p = g / tp;
    std::vector<int32_t> m;
    for (int d = 0; d < dp; ++d) m.push_back(t + tp * d + tp * dp * p);
    return m;
  }
};

}  // namespace

std::vector<RankInput> MakeJob(const SyntheticJob& job) {
  Layout l{std::max(job.groups.tp, 1), std::max(job.groups.dp, 1), std::max(job.groups.pp, 1)};
  int world = l.tp * l.dp * l.pp;
  std::mt19937_64 rng(job.seed);
  auto jitter = [&]() -> int64_t {
    if (job.jitter_ns <= 0) return 0;
    return std::uniform_int_distribution<int64_t>(-job.jitter_ns, job.jitter_ns)(rng);
  };
  std::vector<RankInput> ranks(world);
  std::vector<int64_t> clock(world, int64_t{1000000000000});
  for (int r = 0; r < world; ++r) {
    ranks[r].rank = r;
    ranks[r].node = "node" + std::to_string(r / 4);
    ranks[r].arrivals.reserve(2 * job.steps);
    if (l.tp > 1) ranks[r].comms.push_back({kTpCommBase + l.TpGroup(r), 0, l.tp, r % l.tp,
                                            l.TpMembers(l.TpGroup(r))});
    if (l.dp > 1) ranks[r].comms.push_back({kDpCommBase + l.DpGroup(r), 0, l.dp, (r / l.tp) % l.dp,
                                            l.DpMembers(l.DpGroup(r))});
  }
  std::vector<int64_t> arrival(world), busy(world), idle(world);
  auto collective = [&](uint64_t comm, uint64_t seq, const std::vector<int32_t>& members,
                        int64_t transfer) {
    int64_t last = 0;
    for (int32_t m : members) last = std::max(last, arrival[m]);
    int64_t end = last + transfer + jitter() / 10;
    for (int32_t m : members) {
      Arrival a;
      a.comm_id = comm;
      a.seq = seq;
      a.count = job.bytes / 4;
      a.bytes = job.bytes;
      a.op = static_cast<uint16_t>(format::Operation::kAllReduce);
      a.dtype = static_cast<uint8_t>(format::DType::kF32);
      a.comm_size = static_cast<int32_t>(members.size());
      a.start_ns = arrival[m];
      a.issue_ns = arrival[m] - 20000;
      a.end_ns = end + std::abs(jitter()) / 100;
      a.busy_before_ns = busy[m];
      a.idle_before_ns = idle[m];
      a.gap_begin_ns = clock[m];  // the previous collective's end; the idle time comes first
      ranks[m].arrivals.push_back(a);
      clock[m] = a.end_ns;
    }
  };
  for (int step = 0; step < job.steps; ++step) {
    uint64_t seq = static_cast<uint64_t>(step) + 1;
    for (int r = 0; r < world; ++r) {
      double factor = r == job.slow_rank ? job.slow_factor : 1.0;
      idle[r] = std::max<int64_t>(0, job.host_gap_ns + jitter() / 10) +
                (r == job.host_rank ? job.extra_host_gap_ns : 0);
      busy[r] = static_cast<int64_t>(job.compute_ns * factor) + jitter();
      arrival[r] = clock[r] + idle[r] + busy[r];
    }
    if (l.tp > 1) {
      for (int g = 0; g < world / l.tp; ++g) {
        collective(kTpCommBase + g, seq, l.TpMembers(g), job.transfer_ns + jitter() / 10);
      }
      for (int r = 0; r < world; ++r) {
        idle[r] = std::max<int64_t>(0, job.host_gap_ns + jitter() / 10);
        busy[r] = 0;
        arrival[r] = clock[r] + idle[r];
      }
    }
    if (l.dp > 1) {
      for (int g = 0; g < world / l.dp; ++g) {
        double f = g == job.slow_dp_group ? job.link_factor : 1.0;
        collective(kDpCommBase + g, seq, l.DpMembers(g),
                   static_cast<int64_t>(job.transfer_ns * f) + jitter() / 10);
      }
    }
  }
  return ranks;
}

int64_t JobEnd(const std::vector<RankInput>& ranks) {
  int64_t end = 0;
  for (const RankInput& r : ranks) {
    for (const Arrival& a : r.arrivals) end = std::max(end, a.end_ns);
  }
  return end;
}

}  // namespace analysis
}  // namespace xtimer

// Stragglers, slow links and bus bandwidth from complete collective instances.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>

#include "analysis/host_spans.h"
#include "analysis/passes.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr double kNsPerS = 1e9;

double Gbps(double bytes, double ns) { return ns > 0 ? bytes / ns : 0; }

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * x);
  return buf;
}

std::string GbpsText(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", gbps);
  return buf;
}

void AddBandwidth(const std::vector<RankInput>& ranks, const CommSums& c, Report* report) {
  for (const SigSums& sig : c.sigs) {
    double transfer = sig.transfer_total();
    for (size_t slot = 0; slot < c.slots.size(); ++slot) {
      if (!sig.own_instances[slot]) continue;
      BusBandwidth b;
      b.rank = ranks[c.comm->inputs[slot]].rank;
      b.comm_id = c.comm->id;
      b.op = sig.op;
      b.bytes = sig.bytes;
      b.instances = sig.own_instances[slot];
      b.own_bus_bytes = sig.bus_bytes * static_cast<double>(b.instances);
      b.own_ns = sig.own[slot];
      b.transfer_bus_bytes = sig.bus_bytes * static_cast<double>(sig.transfers.size());
      b.transfer_ns = transfer;
      report->bus_bandwidth.push_back(b);
    }
  }
}

// A communicator whose true bus bandwidth is below link_slow_fraction of its class (same size,
// op and bytes) or of its own first instances.
class LinkFinder {
 public:
  explicit LinkFinder(const Options& options) : options_(options) {}

  void Collect(const std::vector<CommSums>& all) {
    for (const CommSums& c : all) {
      for (const SigSums& s : c.sigs) {
        if (TooShort(s)) continue;
        double bw = Gbps(s.bus_bytes * s.transfers.size(), s.transfer_total());
        if (bw > 0) classes_[{c.comm->size, s.op, s.bytes}].push_back(bw);
      }
    }
  }

  // Returns true with *finding when the communicator's link is slow.
  bool Check(const CommSums& c, Straggler* finding) {
    for (const SigSums& s : c.sigs) {
      if (TooShort(s)) continue;
      double total = s.transfer_total();
      double bw = Gbps(s.bus_bytes * s.transfers.size(), total);
      if (bw <= 0) continue;
      std::vector<double> peers = classes_[{c.comm->size, s.op, s.bytes}];
      double class_median = peers.size() >= 2 ? Median(&peers) : 0;
      double baseline = 0;
      std::string against;
      if (class_median > 0 && bw < options_.link_slow_fraction * class_median) {
        baseline = class_median;
        against = "the median of " + std::to_string(peers.size()) +
                  " communicators of its size, operation and size in bytes";
      }
      size_t n = s.transfers.size();
      size_t first = std::max<size_t>(4, n / 10);
      if (!baseline && n >= 2 * first) {
        double t_first = 0, t_rest = 0;
        for (size_t i = 0; i < n; ++i) (i < first ? t_first : t_rest) += s.transfers[i];
        double bw_first = Gbps(s.bus_bytes * first, t_first);
        double bw_rest = Gbps(s.bus_bytes * (n - first), t_rest);
        if (bw_rest > 0 && bw_rest < options_.link_slow_fraction * bw_first) {
          bw = bw_rest;
          baseline = bw_first;
          against = "its own first " + std::to_string(first) + " instances";
        }
      }
      if (!baseline) continue;
      finding->rank = -1;
      finding->comm_id = c.comm->id;
      finding->cause = Cause::kLink;
      // Time lost to the slow link, in rank-seconds like wait_caused: the transfer time beyond
      // what the baseline rate needs, for every member.
      double lost_ns = total - s.bus_bytes * n / baseline;
      finding->wait_caused_s = std::max(0.0, lost_ns) * c.comm->size / kNsPerS;
      finding->evidence.push_back(
          "true bus bandwidth of " + OpText(s.op) + " (" + std::to_string(s.bytes) +
          " bytes, " + std::to_string(c.comm->size) + " ranks) on communicator " +
          CommText(c.comm->id) + " is " + GbpsText(bw) + ", below " +
          Percent(options_.link_slow_fraction) + " of " + GbpsText(baseline) + " (" + against +
          "), while its ranks arrive on time");
      return true;
    }
    return false;
  }

 private:
  // Transfers of a few microseconds are mostly latency and timer noise: no rate is judged on them.
  bool TooShort(const SigSums& s) const {
    return s.transfers.empty() ||
           s.transfer_total() < static_cast<double>(options_.min_link_transfer_ns) *
                                    static_cast<double>(s.transfers.size());
  }

  const Options& options_;
  std::map<std::tuple<int32_t, uint16_t, uint64_t>, std::vector<double>> classes_;
};

// Cause host: what the rank's host spans are credited with of its GPU's idle time before the
// arrivals it was last in (InstanceFolder::CreditHost), largest first; credits under 1% of that
// idle time are left out.
void AddHostActivities(const RankInput& rank, const SlotSums& s, Straggler* out) {
  out->host_idle_s = s.late_idle / kNsPerS;
  if (s.host.empty() || s.late_idle <= 0) return;
  const HostIndex index(rank.host_spans);  // the fold's labels: built the same way
  std::vector<size_t> order;
  for (size_t i = 0; i < s.host.size() && i < index.labels(); ++i) {
    if (s.host[i] >= 0.01 * s.late_idle) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&s](size_t a, size_t b) { return s.host[a] > s.host[b]; });
  if (order.size() > kMaxHostActivities) order.resize(kMaxHostActivities);
  std::string list;
  for (size_t i : order) {
    const HostSpanClass c = ClassifyHostSpan(index.label(i));
    out->host.push_back({HostKindName(c.kind), index.label(i).name, c.text, s.host[i] / kNsPerS});
    list += (list.empty() ? "" : ", ") + c.text + " " + DurationText(out->host.back().seconds);
  }
  if (list.empty()) return;
  out->evidence.push_back("its GPU sat idle " + DurationText(out->host_idle_s) + " before the " +
                          std::to_string(s.last) + " arrivals it was last in; its host was in " +
                          list);
}

// The straggler finding for one member, if it is one.
bool RankFinding(const std::vector<RankInput>& ranks, const CommSums& c, size_t slot,
                 const Options& options, Straggler* out) {
  const SlotSums& s = c.slots[slot];
  if (!s.instances || !c.instances) return false;
  double n = static_cast<double>(s.instances);
  double lateness = s.lateness / n;
  double mean_transfer = c.transfer / static_cast<double>(c.instances);
  if (s.last / n < options.min_share_last) return false;
  const double peers_time = static_cast<double>(c.slots.size() - 1) * c.span_ns();
  if (s.wait_caused < options.min_wait_share * peers_time) return false;
  if (lateness < options.min_lateness_fraction * mean_transfer || lateness < options.min_lateness_ns) {
    return false;
  }
  if (c.slow_link && lateness < mean_transfer) return false;  // the link explains the waits
  std::vector<double> busy, idle;
  for (size_t p = 0; p < c.slots.size(); ++p) {
    if (p == slot || !c.slots[p].instances) continue;
    busy.push_back(c.slots[p].busy / c.slots[p].instances);
    idle.push_back(c.slots[p].idle / c.slots[p].instances);
  }
  double my_busy = s.busy / n, my_idle = s.idle / n;
  double peer_busy = Median(&busy), peer_idle = Median(&idle);
  double excess_busy = my_busy - peer_busy, excess_idle = my_idle - peer_idle;
  // A rank late for reasons outside its own step (it waited in an earlier collective) relays
  // someone else's delay: not a straggler itself.
  if (excess_busy + excess_idle < 0.5 * lateness) return false;
  if (excess_busy >= 0.5 * lateness) {
    out->cause = Cause::kCompute;
  } else if (excess_idle >= 0.5 * lateness) {
    out->cause = Cause::kHost;
  } else {
    out->cause = excess_busy >= excess_idle ? Cause::kCompute : Cause::kHost;
  }
  out->rank = ranks[c.comm->inputs[slot]].rank;
  out->comm_id = c.comm->id;
  out->share_last = s.last / n;
  out->mean_lateness_s = lateness / kNsPerS;
  out->wait_caused_s = s.wait_caused / kNsPerS;
  out->evidence.push_back(
      "arrived last in " + Percent(out->share_last) + " of " + std::to_string(s.instances) +
      " instances on communicator " + CommText(c.comm->id) + " (" + std::to_string(c.comm->size) +
      " ranks), " + DurationText(out->mean_lateness_s) + " after the median arrival on average (mean transfer " +
      DurationText(mean_transfer / kNsPerS) + ")");
  out->evidence.push_back("GPU busy " + DurationText(my_busy / kNsPerS) +
                          " before its arrivals vs " + DurationText(peer_busy / kNsPerS) +
                          " for its peers (median); idle " + DurationText(my_idle / kNsPerS) +
                          " vs " + DurationText(peer_idle / kNsPerS));
  if (out->cause == Cause::kHost) AddHostActivities(ranks[c.comm->inputs[slot]], s, out);
  return true;
}

void AddRankStats(const std::vector<RankInput>& ranks, const std::vector<CommSums>& all,
                  Report* report) {
  std::vector<RankStats> stats(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) stats[i].rank = ranks[i].rank;
  for (const CommSums& c : all) {
    for (size_t slot = 0; slot < c.slots.size(); ++slot) {
      const SlotSums& s = c.slots[slot];
      RankStats& r = stats[c.comm->inputs[slot]];
      r.instances += s.instances;
      r.arrived_last += s.last;
      r.wait_s += s.wait / kNsPerS;
      r.transfer_s += s.transfer / kNsPerS;
      r.wait_caused_s += s.wait_caused / kNsPerS;
    }
  }
  std::stable_sort(stats.begin(), stats.end(),
                   [](const RankStats& a, const RankStats& b) { return a.rank < b.rank; });
  report->ranks = std::move(stats);
}

// The stage of the rank stragglers that caused the most waiting; -1 without any.
int BoundingStage(const Report& report, const Options& options) {
  if (!options.has_groups || options.groups.pp < 2) return -1;
  std::vector<double> caused(options.groups.pp, 0);
  for (const Straggler& s : report.stragglers) {
    if (s.rank >= 0 && s.rank < options.groups.world()) {
      caused[PipelineStage(options.groups, s.rank)] += s.wait_caused_s;
    }
  }
  auto it = std::max_element(caused.begin(), caused.end());
  return *it > 0 ? static_cast<int>(it - caused.begin()) : -1;
}

}  // namespace

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kCompute: return "compute";
    case Cause::kHost: return "host";
    case Cause::kLink: return "link";
  }
  return "unknown";
}

void FindStragglers(const std::vector<RankInput>& ranks, const std::vector<CommView>& comms,
                    const Options& options, Report* report) {
  std::vector<CommSums> all;
  all.reserve(comms.size());
  for (const CommView& c : comms) {
    all.push_back(c.facts.sums);
    all.back().comm = &c;
    report->instances += all.back().instances;
  }
  LinkFinder links(options);
  links.Collect(all);
  for (CommSums& c : all) {
    AddBandwidth(ranks, c, report);
    Straggler link;
    if (links.Check(c, &link)) {
      c.slow_link = true;
      report->stragglers.push_back(std::move(link));
    }
    for (size_t slot = 0; slot < c.slots.size(); ++slot) {
      Straggler s;
      if (RankFinding(ranks, c, slot, options, &s)) report->stragglers.push_back(std::move(s));
    }
  }
  if (options.has_groups) {
    for (Straggler& s : report->stragglers) {
      auto it = std::lower_bound(comms.begin(), comms.end(), s.comm_id,
                                 [](const CommView& c, uint64_t id) { return c.id < id; });
      if (it != comms.end() && it->id == s.comm_id) {
        s.group = GroupKindOf(options.groups, MemberRanks(*it, ranks));
      }
    }
  }
  std::stable_sort(report->stragglers.begin(), report->stragglers.end(),
                   [](const Straggler& a, const Straggler& b) {
                     return a.wait_caused_s > b.wait_caused_s;
                   });
  AddRankStats(ranks, all, report);
  report->bounding_stage = BoundingStage(*report, options);
}

}  // namespace analysis
}  // namespace xtimer

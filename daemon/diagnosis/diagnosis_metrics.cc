#include "daemon/diagnosis/diagnosis_metrics.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "daemon/export/metric_families.h"
#include "daemon/export/metrics.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

enum DiagnosisFamily {
  kCommWaiting,
  kRankWaiting,
  kThreshold,
  kVerdict,
  kCulprit,
  kInstances,
  kTime,
  kBusBytes,
  kWait,
  kTransfer,
  kArrivedLast,
  kWaitCaused,
  kBusyBefore,
  kIdleBefore,
  kTrueBandwidth,
  kObservedBandwidth,
  kStepSeconds,
  kHostActivity,
  kFamilyCount,
};

constexpr FamilyInfo kFamilies[kFamilyCount] = {
    {"xtimer_comm_waiting_hang", MetricType::Gauge,
     "1 while this rank waits in an operation of the communicator past its hang threshold in "
     "force (xtimer_comm_hang_threshold_seconds), as the live diagnosis decided at its last pass. "
     "It is 1 on the waiting ranks (the victims); the culprit is usually a member where it is 0, "
     "named by xtimer_hang_culprit and xtimer_comm_inflight_info."},
    {"xtimer_rank_waiting_hang", MetricType::Gauge,
     "1 while this rank waits in an operation of any communicator past its hang threshold (the "
     "live diagnosis's decision). It is 1 on the waiting ranks (the victims); the culprit is "
     "named elsewhere (xtimer_hang_culprit)."},
    {"xtimer_comm_hang_threshold_seconds", MetricType::Gauge,
     "The adaptive hang threshold in force for the rank's communicator: cadence factor x its "
     "median gap between completed collectives, within [--hang-min-seconds, --hang-timeout]."},
    {"xtimer_hang_verdict", MetricType::Gauge,
     "1 per current hang verdict of the live diagnosis among this node's ranks (kind: "
     "never_issued, mismatch, stuck_in_collective, exited, not_started, waiting_on_remote)."},
    {"xtimer_hang_culprit", MetricType::Gauge,
     "1 per culprit rank of a current hang verdict: the rank to look at, not a victim."},
    {"xtimer_collective_instances_total", MetricType::Counter,
     "Collectives the rank completed on the communicator."},
    {"xtimer_collective_time_seconds_total", MetricType::Counter,
     "The rank's own GPU time in its completed collectives on the communicator (includes "
     "waiting for later ranks)."},
    {"xtimer_collective_bus_bytes_total", MetricType::Counter,
     "Bus bytes (nccl-tests factors) of the rank's completed collectives on the communicator."},
    {"xtimer_collective_wait_seconds_total", MetricType::Counter,
     "Time the rank waited in collectives for later members on this node (last local arrival "
     "minus its own)."},
    {"xtimer_collective_transfer_seconds_total", MetricType::Counter,
     "Time after the last local member's arrival until the collective ended, summed."},
    {"xtimer_collective_arrived_last_total", MetricType::Counter,
     "Collective instances in which the rank arrived last among the members on this node."},
    {"xtimer_collective_wait_caused_seconds_total", MetricType::Counter,
     "Waiting of the other local members caused by the rank when it arrived last."},
    {"xtimer_collective_busy_before_seconds_total", MetricType::Counter,
     "GPU time of the rank's other work between its previous collective and each arrival."},
    {"xtimer_collective_idle_before_seconds_total", MetricType::Counter,
     "Time the rank's GPU sat idle between its previous collective and each arrival (host "
     "gaps)."},
    {"xtimer_bus_bandwidth_true_bytes_per_second", MetricType::Gauge,
     "Bus bandwidth from the transfer time alone (end minus the last local arrival), over the "
     "rank's last 256 collectives per communicator."},
    {"xtimer_bus_bandwidth_observed_bytes_per_second", MetricType::Gauge,
     "Bus bandwidth from the rank's own GPU time, over the same collectives."},
    {"xtimer_step_seconds", MetricType::Histogram,
     "The rank's training steps, each observed once, from one source per rank: "
     "source=\"nvtx\" the NVTX ranges named XTIMER_STEP_RANGE where its process marks steps, "
     "else source=\"python\" its Python step functions (XTIMER_PY_TRACE ...@step), else "
     "source=\"collectives\": guessed from the period over which its collectives repeat "
     "(docs/analysis.md)."},
    {"xtimer_straggler_host_seconds", MetricType::Gauge,
     "For a rank the live diagnosis finds to be a straggler of cause host on a communicator: "
     "the GPU idle time before the arrivals it was last in (among the newest 256 per "
     "communicator) that its host spent in each NVTX range or Python span (kind: data_loading, "
     "gc, traced_function, nvtx_range; name: the span's), at most 3 (docs/analysis.md)."},
};

const RankLive* FindRank(const JobLive& job, int32_t rank) {
  for (const RankLive& r : job.ranks) {
    if (r.input.rank == rank) return &r;
  }
  return nullptr;
}

std::string OpName(uint16_t op) {
  return format::OperationName(static_cast<format::Operation>(op));
}

void AddCounters(const Labels& l, const CommLive& c, FamilyBuilder* b) {
  b->Add(kThreshold, l, c.threshold_s);
  b->Add(kInstances, l, static_cast<double>(c.own.instances));
  b->Add(kTime, l, c.own.time_s);
  b->Add(kBusBytes, l, c.own.bus_bytes);
  b->Add(kWait, l, c.shared.wait_s);
  b->Add(kTransfer, l, c.shared.transfer_s);
  b->Add(kArrivedLast, l, static_cast<double>(c.shared.arrived_last));
  b->Add(kWaitCaused, l, c.shared.wait_caused_s);
  b->Add(kBusyBefore, l, c.own.busy_before_s);
  b->Add(kIdleBefore, l, c.own.idle_before_s);
}

// The report has one entry per (rank, comm, op, bytes); the gauges one per (rank, comm, op): the
// sizes combine as their total bus bytes over their total time.
void AddBandwidth(const JobLive& job, FamilyBuilder* b) {
  std::map<std::tuple<int32_t, uint64_t, uint16_t>, analysis::BusBandwidth> sums;
  for (const analysis::BusBandwidth& bw : job.report.bus_bandwidth) {
    if (bw.observed_bytes_per_second() <= 0 || bw.true_bytes_per_second() <= 0) continue;
    analysis::BusBandwidth& s = sums[std::make_tuple(bw.rank, bw.comm_id, bw.op)];
    s.own_bus_bytes += bw.own_bus_bytes;
    s.own_ns += bw.own_ns;
    s.transfer_bus_bytes += bw.transfer_bus_bytes;
    s.transfer_ns += bw.transfer_ns;
  }
  for (const auto& e : sums) {
    const RankLive* r = FindRank(job, std::get<0>(e.first));
    if (r == nullptr) continue;
    Labels l = RankLabels(r->process);
    l.push_back({"comm", CommLabel(std::get<1>(e.first))});
    l.push_back({"op", OpName(std::get<2>(e.first))});
    b->Add(kTrueBandwidth, l, e.second.true_bytes_per_second());
    b->Add(kObservedBandwidth, l, e.second.observed_bytes_per_second());
  }
}

// The rank's step histogram from one source, so that sums over ranks count each step once: the
// steps its process marks (an NVTX range named XTIMER_STEP_RANGE, else a Python step function;
// the process's, once: on its first rank), else the guess from its collectives.
void AddSteps(const RankLive& r, const Labels& rank, FamilyBuilder* b) {
  const ProcessSnapshot& p = r.process;
  const StepCounts* steps = &r.steps;
  const char* source = "collectives";
  if (p.steps.count > 0 || p.python_steps.count > 0) {
    if (!p.first_rank) return;
    steps = p.steps.count > 0 ? &p.steps : &p.python_steps;
    source = p.steps.count > 0 ? "nvtx" : "python";
  }
  if (steps->count == 0) return;
  Labels l = rank;
  l.push_back({"source", source});
  b->AddHistogram(kStepSeconds, l, kStepBucketsS.data(), steps->counts.data(),
                  kStepBucketsS.size(), steps->sum_s);
}

// What the host stragglers' hosts were doing (analysis::Straggler::host).
void AddHostActivities(const JobLive& job, FamilyBuilder* b) {
  for (const analysis::Straggler& s : job.report.stragglers) {
    const RankLive* r = s.rank >= 0 ? FindRank(job, s.rank) : nullptr;
    if (r == nullptr) continue;
    for (const analysis::HostActivity& h : s.host) {
      Labels l = RankLabels(r->process);
      l.push_back({"comm", CommLabel(s.comm_id)});
      l.push_back({"kind", h.kind});
      l.push_back({"name", h.name});
      b->Add(kHostActivity, l, h.seconds);
    }
  }
}

// The waiting decision of a rank and its communicators; with `counters`, their counters.
void AddRank(const RankLive& r, bool counters, FamilyBuilder* b) {
  const Labels rank = RankLabels(r.process);
  for (const CommLive& c : r.comms) {
    Labels l = rank;
    l.push_back({"comm", CommLabel(c.comm_id)});
    b->Add(kCommWaiting, l, c.waiting ? 1 : 0);
    if (counters) AddCounters(l, c, b);
  }
  b->Add(kRankWaiting, rank, r.waiting ? 1 : 0);
  if (counters) AddSteps(r, rank, b);
}

}  // namespace

std::vector<MetricFamily> BuildDiagnosisFamilies(const LiveState& state) {
  FamilyBuilder b(kFamilies, kFamilyCount);  // in DiagnosisFamily order
  for (const RankLive& r : state.unranked) AddRank(r, /*counters=*/false, &b);
  for (const JobLive& job : state.jobs) {
    for (const RankLive& r : job.ranks) AddRank(r, /*counters=*/true, &b);
    std::set<std::tuple<uint64_t, std::string, uint64_t, int32_t>> seen;  // no duplicate series
    for (const analysis::HangVerdict& v : job.report.hangs) {
      const char* kind = analysis::HangKindName(v.kind);
      if (!seen.insert(std::make_tuple(v.comm_id, kind, v.seq, -1)).second) continue;
      b.Add(kVerdict,
            {{"job", job.job},
             {"comm", CommLabel(v.comm_id)},
             {"kind", kind},
             {"seq", std::to_string(v.seq)},
             {"op", OpName(v.op)}},
            1);
      for (int32_t culprit : v.culprit_ranks) {
        const RankLive* r = FindRank(job, culprit);
        if (r == nullptr) continue;  // on another node: the rules name it (deploy/)
        if (!seen.insert(std::make_tuple(v.comm_id, kind, 0, culprit)).second) continue;
        Labels l = RankLabels(r->process);
        l.push_back({"comm", CommLabel(v.comm_id)});
        l.push_back({"kind", kind});
        b.Add(kCulprit, l, 1);
      }
    }
    AddBandwidth(job, &b);
    AddHostActivities(job, &b);
  }
  return b.Take();
}

std::vector<MetricFamily> DiagnosisCollector::Collect() const {
  return BuildDiagnosisFamilies(*diagnosis_->Latest());
}

}  // namespace daemon
}  // namespace xtimer

#include "daemon/export/metrics.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

#include "daemon/export/metric_families.h"
#include "daemon/model/op_stats.h"

namespace xtimer {
namespace daemon {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// Indices into the family table below; the order is the exposition order.
enum ModelFamily {
  kOpsTotal,
  kOpSecondsTotal,
  kOpBytesTotal,
  kOpFlopTotal,
  kWindowOps,
  kLatencyAvg,
  kLatencyMin,
  kLatencyMax,
  kLatencyP99,
  kMatmulFlopRate,
  kBusBandwidth,
  kAlgoBandwidth,
  kCommLastIssued,
  kCommLastCompleted,
  kCommOldestAge,
  kCommInflightInfo,
  kCommLastCompletedTime,
  kCommSize,
  kCommRank,
  kRankUp,
  kRankInfo,
  kRankExitCode,
  kRankExitTime,
  kRingWritten,
  kRingDropped,
  kUntimedOps,
  kHookOverhead,
  kHookOps,
  kHookTimedOps,
  kHookBudget,
  kHookTracked,
  kRingInvalid,
  kRingLost,
  kRingUnaggregated,
  kRingFill,
  kHeartbeatAge,
  kHistoryRecords,
  kProcessesRegistered,
  kProcessesExited,
  kRegistrations,
  kRegistrationsRejected,
  kRefusedRegistrations,
  kMemoryStateBytes,
  kMemoryBudgetBytes,
  kHistoryShrunk,
  kIdentityConflicts,
  kStartTime,
  kFamilyCount,
};

constexpr FamilyInfo kFamilies[kFamilyCount] = {
    {"xtimer_ops_total", MetricType::Counter, "Operations completed."},
    {"xtimer_op_seconds_total", MetricType::Counter,
     "Summed GPU duration of completed operations (host time blocked for host_sync)."},
    {"xtimer_op_bytes_total", MetricType::Counter,
     "Bytes of completed collectives (per-rank send buffer), p2p ops, copies and sets."},
    {"xtimer_op_flop_total", MetricType::Counter,
     "Floating-point operations of completed matmuls (2*m*n*k*batch)."},
    {"xtimer_op_window_ops", MetricType::Gauge, "Operations completed in the sliding window."},
    {"xtimer_op_latency_avg_seconds", MetricType::Gauge,
     "Mean operation duration over the sliding window."},
    {"xtimer_op_latency_min_seconds", MetricType::Gauge,
     "Shortest operation duration in the sliding window."},
    {"xtimer_op_latency_max_seconds", MetricType::Gauge,
     "Longest operation duration in the sliding window."},
    {"xtimer_op_latency_p99_seconds", MetricType::Gauge,
     "99th percentile (nearest rank) of the raw operation durations in the sliding window."},
    {"xtimer_matmul_flop_per_second", MetricType::Gauge,
     "Matmul throughput over the sliding window: summed FLOP / summed seconds (divide by 1e12 "
     "for TFLOPS)."},
    {"xtimer_collective_bus_bandwidth_bytes_per_second", MetricType::Gauge,
     "nccl-tests bus bandwidth over the sliding window: summed bus bytes / summed seconds "
     "(divide by 1e9 for GB/s)."},
    {"xtimer_collective_algo_bandwidth_bytes_per_second", MetricType::Gauge,
     "nccl-tests algorithm bandwidth over the sliding window: summed buffer bytes / summed "
     "seconds."},
    {"xtimer_comm_last_issued_seq", MetricType::Gauge,
     "Sequence number of the last operation issued on the communicator."},
    {"xtimer_comm_last_completed_seq", MetricType::Gauge,
     "Sequence number of the last operation completed on the communicator."},
    {"xtimer_comm_oldest_inflight_age_seconds", MetricType::Gauge,
     "Age of the oldest operation in flight on the communicator, 0 when none."},
    {"xtimer_comm_inflight_info", MetricType::Gauge,
     "Always 1; the rank's oldest collective in flight on the communicator (seq, op, dtype, "
     "count, root, state: started = the GPU reached it, queued = earlier work on its stream has "
     "not finished), present only while it is at least 1 s old."},
    {"xtimer_comm_last_completed_timestamp_seconds", MetricType::Gauge,
     "Unix time at which the last operation on the communicator completed."},
    {"xtimer_comm_size", MetricType::Gauge, "Ranks in the communicator."},
    {"xtimer_comm_rank", MetricType::Gauge, "This process's rank in the communicator."},
    {"xtimer_rank_up", MetricType::Gauge,
     "1 while the process is connected and its ring heartbeat is fresh; 0 when the heartbeat is "
     "stale or the process exited (its series are kept for the exited grace period)."},
    {"xtimer_rank_info", MetricType::Gauge,
     "Always 1; carries the process id and world size of a registered process."},
    {"xtimer_rank_exit_code", MetricType::Gauge,
     "Only for an exited process: its exit status (cause=\"exit\"), the fatal signal number "
     "(cause=\"signal\"), or -1 (cause=\"connection_lost\": it ended without saying how)."},
    {"xtimer_rank_exit_timestamp_seconds", MetricType::Gauge,
     "Only for an exited process: Unix time at which its connection to the daemon closed."},
    {"xtimer_ring_records_written_total", MetricType::Counter,
     "Records the process published into its ring."},
    {"xtimer_ring_records_dropped_total", MetricType::Counter,
     "Records the process dropped because its ring was full."},
    {"xtimer_untimed_ops_total", MetricType::Counter,
     "Operations the hook intercepted but could not time, by cause (docs/metrics.md)."},
    {"xtimer_hook_overhead_seconds_total", MetricType::Counter,
     "The hook's own host time on the process's application threads: the work around each "
     "timed op, its CUDA calls included, and its NVTX and Python tracing callbacks "
     "(docs/metrics.md)."},
    {"xtimer_hook_ops_total", MetricType::Counter,
     "Operations the hook considered timing (every call it intercepts that it would time at a "
     "budget of 100%), by kind (docs/metrics.md)."},
    {"xtimer_hook_timed_ops_total", MetricType::Counter,
     "Operations the hook timed, by kind: divided by xtimer_hook_ops_total, the timing rate."},
    {"xtimer_hook_overhead_budget_ratio", MetricType::Gauge,
     "XTIMER_OVERHEAD_BUDGET: the share of an application thread's time the hook may spend "
     "(0.01 = 1%; absent for hooks that predate it)."},
    {"xtimer_hook_tracked_ops_total", MetricType::Counter,
     "Collectives and send/recv the hook left untimed and tracked to their completion, by how "
     "it learned it: mark (a CUDA event it recorded, 628 ns on an H200) or nccl (NCCL's "
     "profiler plugin report, no CUDA call; docs/hook.md)."},
    {"xtimer_ring_records_invalid_total", MetricType::Counter,
     "Records the daemon rejected as malformed."},
    {"xtimer_ring_records_lost_total", MetricType::Counter,
     "Records skipped because the ring positions were impossible (corrupt header)."},
    {"xtimer_ring_records_unaggregated_total", MetricType::Counter,
     "Valid records not aggregated because the process reached its series limit."},
    {"xtimer_ring_fill_ratio", MetricType::Gauge,
     "Fraction of the ring in use when the daemon last drained it."},
    {"xtimer_ring_heartbeat_age_seconds", MetricType::Gauge,
     "Seconds since the process's recorder last updated its ring heartbeat."},
    {"xtimer_history_records", MetricType::Gauge,
     "Operation records retained in memory for dumps."},
    {"xtimer_processes_registered", MetricType::Gauge,
     "Processes registered with the daemon and still connected."},
    {"xtimer_processes_exited", MetricType::Gauge,
     "Exited processes whose series and history are still kept (exited grace period)."},
    {"xtimer_registrations_total", MetricType::Counter, "Rings accepted since the daemon started."},
    {"xtimer_registrations_rejected_total", MetricType::Counter,
     "Registrations refused, all causes (the sum of xtimer_refused_registrations_total)."},
    {"xtimer_refused_registrations_total", MetricType::Counter,
     "Registration connections refused, by cause (limits, timeout, bad hello or ring)."},
    {"xtimer_memory_state_bytes", MetricType::Gauge,
     "Estimated memory held by every process's series, names, communicators and history."},
    {"xtimer_memory_budget_bytes", MetricType::Gauge,
     "The memory budget for that state (--memory-budget-mb)."},
    {"xtimer_history_chunks_shrunk_total", MetricType::Counter,
     "History chunks (4096 records each) dropped early to stay within the memory budget."},
    {"xtimer_identity_conflicts", MetricType::Gauge,
     "Live processes not exported because an older live process has the same labels."},
    {"xtimer_daemon_start_time_seconds", MetricType::Gauge, "Unix time the daemon started."},
};

// xtimer_comm_inflight_info appears once an op is this old, so short ops make no label churn.
constexpr double kInflightInfoMinAgeS = 1.0;

Labels InflightLabels(Labels l, const format::InflightCollective& c) {
  l.push_back({"seq", std::to_string(c.seq)});
  l.push_back({"op", format::OperationName(static_cast<format::Operation>(c.op))});
  l.push_back({"dtype", format::DTypeName(static_cast<format::DType>(c.dtype))});
  l.push_back({"count", std::to_string(c.count)});
  l.push_back({"root", std::to_string(c.root)});
  l.push_back({"state", format::InflightStateName(c.state)});
  l.push_back({"blocked_by", format::BlockedByClass(c)});
  return l;
}

// The hook's ops considered and timed by kind (kinds it never saw are left out) and its budget.
void AddHookTiming(const HookTiming& t, const Labels& rank, FamilyBuilder* b) {
  for (uint8_t k = 1; k <= format::kOpKindMax; ++k) {
    if (t.calls[k] == 0 && t.timed[k] == 0) continue;
    Labels l = rank;
    l.push_back({"kind", format::OpKindName(static_cast<format::OpKind>(k))});
    b->Add(kHookOps, l, static_cast<double>(t.calls[k]));
    b->Add(kHookTimedOps, l, static_cast<double>(t.timed[k]));
  }
  if (t.budget_ppm > 0) b->Add(kHookBudget, rank, t.budget_ppm * 1e-6);
  const std::pair<const char*, uint64_t> tracked[] = {{"mark", t.tracked_by_mark},
                                                      {"nccl", t.tracked_by_nccl}};
  for (const auto& [by, n] : tracked) {
    if (n == 0) continue;
    Labels l = rank;
    l.push_back({"by", by});
    b->Add(kHookTracked, l, static_cast<double>(n));
  }
}

}  // namespace

Labels RankLabels(const ProcessSnapshot& p) {
  return {{"job", p.job},
          {"host", p.host},
          {"pod", p.pod},
          {"rank", std::to_string(p.rank)},
          {"local_rank", std::to_string(p.local_rank)}};
}

std::string CommLabel(uint64_t id) {
  if (id == 0) return "none";
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

std::vector<MetricFamily> BuildFamilies(const Snapshot& snap) {
  FamilyBuilder b(kFamilies, kFamilyCount);  // in ModelFamily order
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.hidden) continue;
    const Labels rank = RankLabels(p);
    for (const SeriesSnapshot& s : p.series) {
      Labels l = rank;
      l.push_back({"kind", format::OpKindName(static_cast<format::OpKind>(s.kind))});
      l.push_back({"operation", format::OperationName(static_cast<format::Operation>(s.op))});
      l.push_back({"dtype", format::DTypeName(static_cast<format::DType>(s.dtype))});
      l.push_back({"size_class", SizeClassName(s.kind, s.size_class)});
      const auto kind = static_cast<format::OpKind>(s.kind);
      const bool is_matmul = kind == format::OpKind::kMatmul;
      const bool is_comm = kind == format::OpKind::kCollective || kind == format::OpKind::kP2P;
      const bool has_bytes = is_comm || kind == format::OpKind::kMemcpy ||
                             kind == format::OpKind::kMemset;
      b.Add(kOpsTotal, l, static_cast<double>(s.count));
      b.Add(kOpSecondsTotal, l, s.seconds);
      if (has_bytes) b.Add(kOpBytesTotal, l, s.bytes);
      if (is_matmul) b.Add(kOpFlopTotal, l, s.flop);
      const WindowStats& w = s.window;
      b.Add(kWindowOps, l, static_cast<double>(w.count));
      if (w.count == 0) continue;
      b.Add(kLatencyAvg, l, w.seconds / static_cast<double>(w.count));
      b.Add(kLatencyMin, l, static_cast<double>(w.min_ns) * 1e-9);
      b.Add(kLatencyMax, l, static_cast<double>(w.max_ns) * 1e-9);
      b.Add(kLatencyP99, l, static_cast<double>(w.p99_ns) * 1e-9);
      if (w.seconds > 0) {
        if (is_matmul) b.Add(kMatmulFlopRate, l, w.flop / w.seconds);
        if (is_comm) {
          b.Add(kBusBandwidth, l, w.bus_bytes / w.seconds);
          b.Add(kAlgoBandwidth, l, w.algo_bytes / w.seconds);
        }
      }
    }
    for (const CommSnapshot& c : p.comms) {
      Labels l = rank;
      l.push_back({"comm", CommLabel(c.comm_id)});
      b.Add(kCommLastIssued, l, static_cast<double>(c.last_issued_seq));
      b.Add(kCommLastCompleted, l, static_cast<double>(c.last_completed_seq));
      b.Add(kCommOldestAge, l, InflightAgeSeconds(p, c.oldest_launch_ns));
      if (c.inflight.state != format::InflightState::kNone &&
          InflightAgeSeconds(p, c.inflight.launch_ns) >= kInflightInfoMinAgeS) {
        b.Add(kCommInflightInfo, InflightLabels(l, c.inflight), 1);
      }
      if (c.last_completed_ns > 0) {
        b.Add(kCommLastCompletedTime, l, static_cast<double>(c.last_completed_ns) * 1e-9);
      }
      if (c.comm_size > 0) {
        b.Add(kCommSize, l, c.comm_size);
        b.Add(kCommRank, l, c.comm_rank);
      }
    }
    b.Add(kRankUp, rank, p.up ? 1 : 0);
    Labels info = rank;
    info.push_back({"pid", std::to_string(p.pid)});
    info.push_back({"world_size", std::to_string(p.world_size)});
    b.Add(kRankInfo, info, 1);
    if (p.exited) {
      Labels exit = rank;
      exit.push_back({"cause", format::ExitKindName(p.exit_cause.kind)});
      b.Add(kRankExitCode, exit, format::ExitCode(p.exit_cause));
      b.Add(kRankExitTime, exit, static_cast<double>(p.exited_ns) * 1e-9);
    }
    b.Add(kRingUnaggregated, rank, static_cast<double>(p.unaggregated));
    if (!p.first_rank) continue;  // the process's ring, once: on its first rank
    b.Add(kRingWritten, rank, static_cast<double>(p.written));
    b.Add(kRingDropped, rank, static_cast<double>(p.dropped));
    for (uint32_t i = 0; i < static_cast<uint32_t>(format::UntimedCause::kCount); ++i) {
      Labels l = rank;
      l.push_back({"cause", format::UntimedCauseName(i)});
      b.Add(kUntimedOps, l, static_cast<double>(p.untimed[i]));
    }
    b.Add(kHookOverhead, rank, static_cast<double>(p.hook_own_ns) * 1e-9);
    AddHookTiming(p.timing, rank, &b);
    b.Add(kRingInvalid, rank, static_cast<double>(p.invalid));
    b.Add(kRingLost, rank, static_cast<double>(p.lost));
    b.Add(kRingFill, rank, p.fill);
    b.Add(kHeartbeatAge, rank, AgeSeconds(snap.now_ns, p.heartbeat_ns));
    b.Add(kHistoryRecords, rank, static_cast<double>(p.history));
  }
  b.Add(kProcessesRegistered, {}, static_cast<double>(snap.connected));
  b.Add(kProcessesExited, {}, static_cast<double>(snap.exited));
  b.Add(kRegistrations, {}, static_cast<double>(snap.registrations));
  b.Add(kRegistrationsRejected, {}, static_cast<double>(snap.registrations_rejected));
  for (const auto& c : snap.registrations_refused) {
    b.Add(kRefusedRegistrations, {{"cause", c.first}}, static_cast<double>(c.second));
  }
  b.Add(kMemoryStateBytes, {}, static_cast<double>(snap.memory_bytes));
  b.Add(kMemoryBudgetBytes, {}, static_cast<double>(snap.memory_budget_bytes));
  b.Add(kHistoryShrunk, {}, static_cast<double>(snap.history_shrinks));
  b.Add(kIdentityConflicts, {}, static_cast<double>(snap.identity_conflicts));
  b.Add(kStartTime, {}, static_cast<double>(snap.start_ns) * 1e-9);
  return b.Take();
}

MetricsCollector::MetricsCollector(const Aggregator* aggregator, std::function<int64_t()> clock)
    : aggregator_(aggregator), clock_(std::move(clock)) {}

std::vector<MetricFamily> MetricsCollector::Collect() const {
  return BuildFamilies(aggregator_->TakeSnapshot(clock_()));
}

}  // namespace daemon
}  // namespace xtimer

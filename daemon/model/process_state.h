// A registered process's state (its op series, ranks and history) and what each costs in the
// memory budget (daemon/model/memory_budget.h): the process registry holds it
// (daemon/model/process_registry.h), the rank model fills it (daemon/model/rank_model.h), the
// snapshot builder reads it (daemon/model/snapshot_builder.h). Internal to the model; it depends
// on the options and snapshot types, never on the aggregator.
#ifndef XTIMER_DAEMON_MODEL_PROCESS_STATE_H_
#define XTIMER_DAEMON_MODEL_PROCESS_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/model/aggregator_options.h"
#include "daemon/model/comm_progress.h"
#include "daemon/model/kernel_names.h"
#include "daemon/model/keyed_table.h"
#include "daemon/model/nvtx_history.h"
#include "daemon/model/op_history.h"
#include "daemon/model/python_stats.h"
#include "daemon/model/rank_key.h"
#include "daemon/model/snapshot.h"
#include "daemon/model/window.h"

namespace xtimer {
namespace daemon {

// One op series of a rank: (kind, op, dtype, size class) with its counters and window.
struct Series {
  Series(uint8_t kind, uint16_t op, uint8_t dtype, uint8_t size_class, const AggregatorOptions& o)
      : kind(kind),
        op(op),
        dtype(dtype),
        size_class(size_class),
        window(o.window_ns, o.window_buckets, o.window_samples) {}
  uint8_t kind;
  uint16_t op;
  uint8_t dtype;
  uint8_t size_class;
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  double bytes = 0;
  double flop = 0;
  LatencyWindow window;
};

// A rank of a process: the whole process, or one of the devices it drives.
struct RankState {
  int device = kWholeProcess;  // a device ordinal once the process has several ranks
  KeyedTable<Series> series;  // keyed by kind, op, dtype and size class (IngestOp)
  CommTable comms;
  uint64_t unaggregated = 0;
};

struct ProcessState {
  ProcessState(size_t history_capacity, size_t nvtx_capacity)
      : history(history_capacity), nvtx(nvtx_capacity) {}
  int pid = 0;
  uint32_t uid = 0;   // SO_PEERCRED of its connection
  std::string token;  // its job token
  format::Identity identity;
  ProcessStatus status;  // inflight rows are moved into comms
  int64_t registered_ns = 0;
  // At least one; more once communicators live on several devices, by ascending device.
  std::vector<std::unique_ptr<RankState>> ranks;
  int comm_device = kNoDevice;  // the device of the first communicator seen (one-rank process)
  size_t series_count = 0;  // over every rank (max_series_per_process)
  OpHistory history;        // the newest (at most options_.history) op records
  uint64_t ops_seen = 0;    // op records ever ingested (the tap's sequence number)
  KernelNames names;
  NvtxHistory nvtx;  // NVTX events and strings (docs/daemon.md "NVTX")
  // Its steps, start to next start: of its NVTX step ranges (format::kNvtxStep), and of its
  // Python step functions' spans (format::PythonSpanKind::kStep); the newest start of each.
  StepCounts steps;
  StepCounts python_steps;
  int64_t nvtx_step_start_ns = 0;
  int64_t python_step_start_ns = 0;
  PythonStats python;  // its Python spans' totals (docs/metrics.md "Python")
  mutable bool conflict_logged = false;
  bool connected = true;
  ExitCause exit_cause;
  int64_t exited_ns = 0;
  std::string crash_frame;  // SetCrashFrame (docs/crash.md)
  // The estimated memory it holds (docs/daemon.md "Memory budget"), kept up to date by
  // ProcessRegistry::Charge.
  size_t bytes = 0;
};

// What a rank costs before any series: its bounded communicator table.
inline size_t RankBytes(const AggregatorOptions& o) {
  return 256 + (o.max_comms_per_process + 1) * (sizeof(CommState) + kHashNodeBytes);
}

// What a process costs before any series, name or history chunk: the struct, its first rank and
// the name being assembled.
inline size_t BaseBytes(const AggregatorOptions& o) {
  return sizeof(uint64_t) + 1024 + RankBytes(o) + KernelNames::kMaxLength;
}

inline size_t SeriesBytes(const AggregatorOptions& o) {
  return sizeof(Series) + KeyedTable<Series>::kMaxBytesPerItem +
         LatencyWindow::MaxBytes(o.window_buckets, o.window_samples);
}

// The rank an op of `device` counts for: the one on that device, else the process's first.
// Inline: ingest calls it for every op record.
inline RankState* RankOf(const ProcessState& p, int device) {
  if (p.ranks.size() > 1) {
    for (const auto& r : p.ranks) {
      if (r->device == device) return r.get();
    }
  }
  return p.ranks.front().get();
}

// a + b, clamped to int64_t's range.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_PROCESS_STATE_H_

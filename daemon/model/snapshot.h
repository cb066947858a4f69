// What the aggregator shows of its model (plain values, facts only: absolute CLOCK_REALTIME times,
// sequence numbers, counters; no judgement of hangs, which is the live diagnosis's), what the
// transport tells it of a process's ring, and who registered a process. Exporters, the control
// service, dumps and the diagnosis read these; none of them includes the aggregator's state.
#ifndef XTIMER_DAEMON_MODEL_SNAPSHOT_H_
#define XTIMER_DAEMON_MODEL_SNAPSHOT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/model/rank_key.h"
#include "daemon/model/window.h"
#include "format/record.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {

// Why a process is gone: its ring's exit marker, or kNone for a connection that ended without
// one ("connection lost": SIGKILL, SIGTERM, _exit, an older hook).
using ExitCause = format::ExitState;  // its name: format::ExitKindName(cause.kind)
constexpr size_t kMaxCrashFrameBytes = 512;  // Aggregator::SetCrashFrame keeps at most this

// The hook's timing rates and budget, as its ring header gives them (format/ring.h).
struct HookTiming {
  uint64_t calls[format::kOpKindSlots] = {};  // ops considered for timing, by OpKind
  uint64_t timed[format::kOpKindSlots] = {};  // ... of which timed
  uint32_t budget_ppm = 0;                    // XTIMER_OVERHEAD_BUDGET; 0 from older hooks
  uint64_t tracked_by_mark = 0;  // untimed collectives completed by the hook's mark
  uint64_t tracked_by_nccl = 0;  // ... by NCCL's report (its profiler plugin interface)
  int64_t start_ns = 0;  // the ring's creation (the hook's start), CLOCK_REALTIME
};

// What the transport reads from a process's ring header (and its own read counters).
struct ProcessStatus {
  format::Identity identity;
  uint64_t written = 0;  // header write_pos
  uint64_t dropped = 0;  // header dropped
  uint64_t untimed[format::kUntimedSlots] = {};  // header untimed, by format::UntimedCause
  uint64_t hook_own_ns = 0;  // header hook_own_ns: the hook's own time on application threads
  HookTiming timing;
  uint64_t invalid = 0;  // records that failed validation (reader's running total)
  uint64_t lost = 0;     // records skipped over impossible positions (reader's running total)
  double fill = 0;       // backlog / capacity seen before the last drain, 0..1
  int64_t heartbeat_ns = 0;
  // CLOCK_REALTIME at which the daemon read this status (and had drained the ring just before):
  // with heartbeat_ns, the time its in-flight table is known to hold (observed_ns).
  int64_t read_ns = 0;
  int64_t observed_ns = 0;  // set by the aggregator: min(read_ns, heartbeat_ns) of a valid table
  bool inflight_valid = false;  // false: the writer kept the table busy; keep the previous one
  std::vector<format::InflightRow> inflight;
};

// Plain values for exporters; label strings are already sanitised (printable ASCII).
struct SeriesSnapshot {
  uint8_t kind = 0;
  uint16_t op = 0;
  uint8_t dtype = 0;
  uint8_t size_class = 0;
  uint64_t count = 0;
  double seconds = 0;
  double bytes = 0;
  double flop = 0;
  WindowStats window;
};

struct CommSnapshot {
  uint64_t comm_id = 0;  // 0: the row for ops without a communicator
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  // Host time (CLOCK_REALTIME) of the oldest op in flight on it; 0 when nothing is in flight.
  // Whether that is a hang is the live diagnosis's decision (daemon/diagnosis/diagnosis.h).
  int64_t oldest_launch_ns = 0;
  int64_t last_completed_ns = 0;  // 0 when unknown
  // From the ring's in-flight detail (ring version 2): the device of the row (kNoDevice from a
  // version 1 ring) and the
  // oldest collective in flight (its times absolute), state kNone when there is none or the
  // writer does not say. When one process drives several devices in one communicator, the row
  // whose op is oldest.
  int device = kNoDevice;
  format::InflightCollective inflight;
  // For a kQueued collective: what its stream is working on, a sentence
  // (daemon/model/blocked_by.h); empty when unknown.
  std::string blocked_by;
  int comm_rank = -1;             // from the kComm record, -1 when none was seen
  int comm_size = 0;
  uint64_t parent_id = 0;  // the communicator it was split or shrunk from, else 0
};

// One rank of a process: the whole process, or one device of a process that drives several.
// The step histograms' upper bounds in seconds (a +Inf bucket follows), one set for every source
// of steps (xtimer_step_seconds, docs/metrics.md): from a 1 ms step of a small model to a
// minute-long step of a large one.
constexpr std::array<double, 16> kStepBucketsS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                 0.1,   0.25,   0.5,   1,    2.5,   5,
                                                 10,    20,     30,    60};

// Training steps by duration, in kStepBucketsS: a process's from NVTX (the push/pop ranges its
// hook flagged as steps: XTIMER_STEP_RANGE, format::kNvtxStep), a rank's guessed from its
// collectives (daemon/diagnosis/step_tracker.h).
struct StepCounts {
  std::array<uint64_t, kStepBucketsS.size() + 1> counts{};  // per bucket, not cumulative
  uint64_t count = 0;
  double sum_s = 0;
  void Observe(double s) {
    size_t i = 0;
    while (i < kStepBucketsS.size() && s > kStepBucketsS[i]) ++i;
    ++counts[i];
    ++count;
    sum_s += s;
  }
};

struct ProcessSnapshot {
  uint64_t id = 0;  // the process (shared by its ranks)
  int pid = 0;
  uint32_t uid = 0;  // the registrant's uid (SO_PEERCRED): who owns the rank's data
  std::string job, host, pod;
  // A process with one rank: its identity (environment, or learned from NCCL). A device rank:
  // its rank and size in its largest communicator (the process's identity when it has none),
  // and local_rank = device.
  int rank = -1, local_rank = -1, world_size = -1;
  int device = kWholeProcess;  // the rank's device when the process has several ranks
  RankKey key() const { return RankKey{id, device}; }
  bool first_rank = true;  // the process's first (or only) rank: it carries the ring's values
  bool up = true;
  bool exited = false;  // the connection closed; kept for the exited grace period
  ExitCause exit_cause;
  int64_t exited_ns = 0;  // CLOCK_REALTIME at which the connection closed
  // The innermost frame of its crash report, "function (module)" (docs/crash.md); "" without one.
  std::string crash_frame;
  bool hidden = false;  // another live process has the same labels (see identity conflicts)
  format::OpLogRequest op_log = format::OpLogRequest::kNone;  // its XTIMER_LOG (docs/oplog.md)
  // The process's ring (the same on each of its ranks); unaggregated is the rank's own.
  uint64_t written = 0, dropped = 0, invalid = 0, lost = 0, unaggregated = 0;
  uint64_t untimed[format::kUntimedSlots] = {};
  uint64_t hook_own_ns = 0;  // the hook's own time on the process's application threads
  HookTiming timing;
  double fill = 0;
  int64_t heartbeat_ns = 0;  // the hook's last ring heartbeat (CLOCK_REALTIME), 0 when none
  // Up to when the daemon knows the process's in-flight state: the snapshot's time, its exit,
  // or the last time its in-flight table was read after a drain of its ring (no later than the
  // hook's heartbeat), whichever is earliest. In-flight ages are measured up to then
  // (InflightAgeSeconds), never across a stall of the daemon's reader or of the hook's poller.
  int64_t observed_ns = 0;
  uint64_t history = 0;
  StepCounts steps;  // the process's NVTX steps (the same on each of its ranks)
  StepCounts python_steps;  // its Python step functions' (XTIMER_PY_TRACE ...@step)
  std::vector<SeriesSnapshot> series;
  std::vector<CommSnapshot> comms;
};

// Seconds from `then_ns` to `now_ns`; 0 when `then_ns` is unknown (<= 0) or not before `now_ns`.
inline double AgeSeconds(int64_t now_ns, int64_t then_ns) {
  if (then_ns <= 0 || then_ns >= now_ns) return 0;
  return (static_cast<double>(now_ns) - static_cast<double>(then_ns)) * 1e-9;
}
// The age of `launch_ns` (an op of p in flight) at p.observed_ns: what every surface shows.
inline double InflightAgeSeconds(const ProcessSnapshot& p, int64_t launch_ns) {
  return AgeSeconds(p.observed_ns, launch_ns);
}

struct Snapshot {
  // Every rank of every process, processes in registration order (exited ones included), a
  // process's ranks by device.
  std::vector<ProcessSnapshot> processes;
  uint64_t connected = 0;                  // processes whose connection is open
  uint64_t exited = 0;                     // processes kept for the exited grace period
  uint64_t registrations = 0;
  uint64_t registrations_rejected = 0;    // the sum of registrations_refused
  std::map<std::string, uint64_t> registrations_refused;  // by cause (see RingServer)
  uint64_t memory_bytes = 0;              // estimated state of every process (the budget's unit)
  uint64_t memory_budget_bytes = 0;
  uint64_t history_shrinks = 0;           // history chunks dropped early for the budget
  uint64_t identity_conflicts = 0;
  int64_t start_ns = 0;
  int64_t now_ns = 0;  // CLOCK_REALTIME at which it was taken (TakeSnapshot's now_ns)
};

// Who registered a process: its peer credentials (never the ring's word) and job token.
struct Registrant {
  int pid = 0;
  uint32_t uid = 0;
  std::string token;  // XTIMER_JOB_TOKEN, "" for none
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_SNAPSHOT_H_

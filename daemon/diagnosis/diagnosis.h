// The daemon's live diagnosis (docs/daemon.md "Live diagnosis"): once a second, the analysis
// library (analysis/analysis.h) runs over this node's ranks, job by job, and its verdicts, the
// adaptive hang thresholds and the collective counters become a LiveState that the metrics
// (daemon/diagnosis/diagnosis_metrics.h), the HangCheck control method
// (daemon/diagnosis/hang_check.h) and the
// automatic hang dumps (daemon/diagnosis/hang_dumper.h) read.
//
// Inputs: the aggregator's op tap feeds LiveOps (daemon/model/live_ops.h: each rank's last 256
// collective arrivals per communicator); a pass takes a snapshot without series (identities,
// exits, in-flight rows), builds one analysis::RankInput per local rank and calls
// analysis::Analyze per job. Ranks of unknown global rank (-1) and hidden duplicates are left out.
//
// Counters that compare ranks (wait, transfer, arrived last, wait caused) count each collective
// instance once, when every live local member of its communicator has completed it: Analyze
// (partial_instances) runs over just the instances completed since the previous pass.
//
// Thread safety: RunOnce is serialised internally; Latest() may be called from any thread. The
// pass takes the aggregator's lock only inside its calls (snapshot), never while holding its own.
#ifndef XTIMER_DAEMON_DIAGNOSIS_H_
#define XTIMER_DAEMON_DIAGNOSIS_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "daemon/model/aggregator.h"
#include "daemon/diagnosis/step_tracker.h"
#include "daemon/model/live_ops.h"

namespace xtimer {
namespace daemon {

struct DiagnosisOptions {
  int64_t interval_ns = 1000000000;                      // one pass a second
  int64_t hang_timeout_ns = int64_t{300} * 1000000000;   // --hang-timeout: the upper bound
  int64_t min_hang_ns = int64_t{10} * 1000000000;        // --hang-min-seconds
  int64_t early_hang_ns = int64_t{30} * 1000000000;      // --hang-early-seconds
  double cadence_factor = 10;                            // --hang-cadence-factor
  size_t ring_size = kArrivalRing;                       // arrivals kept per rank and comm
  size_t max_comms = 64;                                 // communicators per process
};

// Counters comparing the local members of a communicator, per rank.
struct SharedCounters {
  uint64_t arrived_last = 0;  // instances it arrived last in, among the local members
  double wait_s = 0;          // time it waited for later local members
  double transfer_s = 0;      // time after the last local arrival
  double wait_caused_s = 0;   // local members' waiting for it, as the last arrival
};

// A ring row's oldest collective in flight (state kStarted or kQueued) as the analysis takes it.
analysis::Arrival InflightArrival(uint64_t comm_id, const format::InflightCollective& c);

struct CommLive {
  uint64_t comm_id = 0;
  // The adaptive hang threshold in force (analysis::Report::thresholds; --hang-timeout for a
  // communicator the analysis gave none, and for unranked ranks).
  double threshold_s = 0;
  int cadence_samples = 0;  // the completions it was derived from
  // The decision: the rank waits in an op of the communicator past threshold_s (its oldest op in
  // flight, aged up to ProcessSnapshot::observed_ns). A victim: the culprit is a member where it
  // is false. Every surface (the waiting gauges, Status, HangCheck) shows this value.
  bool waiting = false;
  OwnCounters own;
  SharedCounters shared;
};

struct RankLive {
  ProcessSnapshot process;  // labels, exit; series left out
  analysis::RankInput input;
  std::vector<CommLive> comms;  // ascending comm id
  bool waiting = false;  // waiting on any of its communicators (CommLive::waiting)
  StepHistogram steps;   // its steps so far, guessed from its collectives (step_tracker.h)
  // This rank's decision for a communicator; nullptr when it has none.
  const CommLive* Comm(uint64_t comm_id) const;
};

struct JobLive {
  std::string job;
  std::vector<RankLive> ranks;  // ascending global rank
  analysis::Report report;
  // The automatic dump of the current hang (daemon/diagnosis/hang_dumper.h), "" when none was
  // written.
  std::string dump_dir;
};

struct LiveState {
  int64_t now_ns = 0;           // CLOCK_REALTIME of the pass
  int64_t early_hang_ns = 0;    // the early threshold the pass judged with (analysis::Options)
  std::vector<JobLive> jobs;    // ascending job label
  // Ranks the analysis cannot place (global rank unknown): only their waiting is judged, against
  // --hang-timeout. Hidden duplicates are in neither list.
  std::vector<RankLive> unranked;
  double pass_cpu_s = 0;        // thread CPU time the pass took
  uint64_t passes = 0;

  // The decision for the rank (ProcessSnapshot::id, ::device) as of this pass; nullptr when the
  // pass did not see it (registered since, or hidden).
  const RankLive* Find(uint64_t process_id, int device) const;
};

// The one judgement of "waiting past the threshold" for a rank's communicator.
bool WaitsPast(const ProcessSnapshot& p, const CommSnapshot& c, int64_t threshold_ns);

class LiveDiagnosis {
 public:
  // `now` returns CLOCK_REALTIME ns. `on_pass` (may be empty) sees every new state before it is
  // published, on the pass's thread (the hang dumper fills dump_dir there).
  LiveDiagnosis(Aggregator* aggregator, DiagnosisOptions options, std::function<int64_t()> now,
                std::function<void(LiveState*)> on_pass = nullptr);
  ~LiveDiagnosis();  // stops the thread, removes the tap
  LiveDiagnosis(const LiveDiagnosis&) = delete;
  LiveDiagnosis& operator=(const LiveDiagnosis&) = delete;

  // A thread that runs a pass every interval until Stop or destruction.
  void Start();
  void Stop();
  // One pass now (tests and the bench call it without Start).
  void RunOnce();
  // The newest state; an empty one before the first pass.
  std::shared_ptr<const LiveState> Latest() const;
  const DiagnosisOptions& options() const { return options_; }
  LiveOps* ops() { return &ops_; }

 private:
  // Adds the shared counters of the instances of `job` completed by every live local member
  // since the last pass.
  void CountInstances(const std::string& job, const std::vector<RankLive>& ranks,
                      const std::map<RankKey, ProcessOps>& ops);
  analysis::Options AnalysisOptions(int64_t now_ns) const;
  // For each straggler of cause host in `report`: its rank's NVTX events over its arrivals'
  // window (the aggregator's NVTX history, at most its 16,384 newest) as the rank's host spans
  // in `inputs` (parallel to `ranks`). Returns whether any rank got one.
  bool AddHostSpans(const analysis::Report& report, const std::vector<RankLive>& ranks,
                    std::vector<analysis::RankInput>* inputs) const;
  // The rank's per-communicator state: its thresholds (from the job's analysis) and counters.
  // Also decides the rank's waiting (CommLive::waiting, RankLive::waiting).
  void AddCommLive(const std::map<RankKey, ProcessOps>& ops,
                   const std::vector<analysis::CommThreshold>& thresholds, RankLive* r) const;

  Aggregator* aggregator_;
  const DiagnosisOptions options_;
  const std::function<int64_t()> now_;
  const std::function<void(LiveState*)> on_pass_;
  LiveOps ops_;
  int tap_id_ = 0;

  std::mutex run_mu_;  // one pass at a time; guards the counting state below
  std::map<std::pair<std::string, uint64_t>, uint64_t> counted_seq_;  // (job, comm) -> seq
  std::map<std::pair<RankKey, uint64_t>, SharedCounters> shared_;  // (rank, comm)
  // Slices of instances not yet completed by every live local member, per (process, comm).
  std::map<std::pair<RankKey, uint64_t>, std::vector<Slice>> pending_;
  StepTracker steps_;
  uint64_t passes_ = 0;

  mutable std::mutex state_mu_;
  std::shared_ptr<const LiveState> latest_;

  std::mutex thread_mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DIAGNOSIS_H_

// Diagnosis: per-rank operation sequences in, verdicts with their evidence out. One pure library
// (no I/O, no clocks of its own) used live by xtimerd on its local ranks, by `xtimer analyze` on
// dumps from any number of nodes, and by `xtimer analyze --hosts` on the daemons' HangCheck
// answers. docs/analysis.md explains every verdict and rule.
//
// Inputs are compact: a rank's timed operations are first reduced, with RankSummarizer, to one
// Arrival per collective instance (comm, seq) it took part in, carrying what came before it on
// the rank's GPU. Everything else (matmuls, copies, kernels) only feeds those summaries.
//
// Times are nanoseconds on one clock for all ranks given together (the caller aligns nodes'
// clocks first, as the converter does).
#ifndef XTIMER_ANALYSIS_ANALYSIS_H_
#define XTIMER_ANALYSIS_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/parallel_groups.h"
#include "format/exit_state.h"

namespace xtimer {
namespace analysis {

// Where an operation is on its rank.
enum class OpState : uint8_t {
  kCompleted = 0,
  kStarted = 1,  // the GPU started it (its start event fired); not finished
  kQueued = 2,   // issued by the host; the GPU has not reached it (earlier work on its stream)
  kIssued = 3,   // issued, not finished; whether the GPU reached it is not known (not timed)
};

// One rank's part in one collective instance.
struct Arrival {
  uint64_t comm_id = 0;
  uint64_t seq = 0;    // per-communicator sequence number, identical on every member
  uint64_t count = 0;  // elements
  uint64_t bytes = 0;  // the send buffer (format::OpRecord::bytes)
  uint16_t op = 0;     // format::Operation
  uint8_t dtype = 0;   // format::DType
  OpState state = OpState::kCompleted;
  int32_t root = -1;   // -1 when the op has none
  int32_t comm_size = 0;
  int64_t issue_ns = 0;  // host call
  int64_t start_ns = 0;  // GPU start: the rank's arrival; 0 when not started
  int64_t end_ns = 0;    // 0 when not completed
  // GPU time of the rank's own other work (matmuls, kernels, copies; not sends and receives,
  // which wait on peers) between the end of its previous collective on any communicator and this
  // arrival.
  int64_t busy_before_ns = 0;
  // Time the rank's GPU sat idle between the end of its previous collective and this arrival: the
  // part of that interval no other op of the rank covered, sends and receives included (host
  // gaps: launch latency, data loading, sleeps, host syncs). busy + idle = that interval less
  // its send/receive time outside own work (both 0 when the previous collective overlaps this
  // one, or for the rank's first collective). docs/analysis.md "Inputs".
  int64_t idle_before_ns = 0;
  // Where that interval begins: the end of the rank's previous collective (0 when there is no
  // interval: the first collective, or one overlapping the previous). What the host did in it
  // (HostSpan) is matched against [gap_begin_ns, start_ns].
  int64_t gap_begin_ns = 0;
};

// A timed operation of any kind, as RankSummarizer takes it (the fields of format::OpRecord and
// timeline::EventRecord that matter here).
struct TimedOp {
  uint16_t op = 0;
  uint8_t kind = 0;  // format::OpKind
  uint8_t dtype = 0;
  int32_t device = -1;
  int32_t root = -1;
  int32_t peer = -1;
  int32_t comm_size = 0;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t issue_ns = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

// The TimedOp of a record that carries the op's fields under their format names (the ring's
// format::OpRecord, the timeline's timeline::EventRecord): the one field-by-field copy. The
// communicator's size and the element count are given, as each format knows them differently.
template <typename Record>
TimedOp TimedOpOfRecord(const Record& r, int32_t comm_size, uint64_t count) {
  TimedOp t;
  t.op = r.op;
  t.kind = r.kind;
  t.dtype = r.dtype;
  t.device = r.device;
  t.root = r.root;
  t.peer = r.peer;
  t.comm_size = comm_size;
  t.comm_id = r.comm_id;
  t.seq = r.seq;
  t.count = count;
  t.bytes = r.bytes;
  t.issue_ns = r.cpu_launch_ns;
  t.start_ns = r.gpu_start_ns;
  t.duration_ns = r.duration_ns;
  return t;
}

// Whether the summaries below make an Arrival of `op`: a collective that reached the GPU and
// completed (a first pass that only counts a rank's arrivals asks this).
bool IsArrival(const TimedOp& op);
// The same from the fields it looks at (op, kind, GPU start and duration: format::OpRecord's).
bool IsArrival(uint16_t op, uint8_t kind, int64_t start_ns, int64_t duration_ns);

// Reduces one rank's completed ops (any order) to Arrivals of its collectives, oldest first.
// Host syncs are ignored; p2p ops are not collectives (they count as GPU work). Memory: the ops
// of one rank at a time.
std::vector<Arrival> SummarizeRank(std::vector<TimedOp> ops);

// The same, incrementally, for the daemon: ops are added as they complete (in completion order
// per stream, streams interleaved), and each collective's Arrival is produced once it is added.
// Work that completes after the collective it preceded is added is attributed approximately
// (documented); memory is bounded (a fixed number of recent non-collective ops).
class RankSummarizer {
 public:
  RankSummarizer();
  // Keeps at most `max_pending_work` non-collective ops since the last collective (default 4096;
  // older ones are dropped, which undercounts busy time on ranks with more ops per step).
  explicit RankSummarizer(size_t max_pending_work);
  ~RankSummarizer();
  RankSummarizer(const RankSummarizer&) = delete;
  RankSummarizer& operator=(const RankSummarizer&) = delete;
  // Returns true and sets *arrival when `op` is a collective.
  bool Add(const TimedOp& op, Arrival* arrival);

 private:
  struct State;
  State* state_;
};

// SummarizeRank's streaming form, for readers of dumps: ops are added in blocks, roughly in
// completion order (a timeline file's order: completion order per stream, streams interleaved).
// Each block is put in SummarizeRank's order and merged with the ops held back; all but the
// newest `window` held ops are then summarised. Ops out of place by fewer than `window`
// positions give exactly SummarizeRank's result; later stragglers are attributed as
// RankSummarizer attributes late work. Memory: about two windows of ops, plus the Arrivals.
class OrderedRankSummarizer {
 public:
  static constexpr size_t kDefaultWindow = 8192;
  explicit OrderedRankSummarizer(size_t window = kDefaultWindow);
  ~OrderedRankSummarizer();
  OrderedRankSummarizer(const OrderedRankSummarizer&) = delete;
  OrderedRankSummarizer& operator=(const OrderedRankSummarizer&) = delete;
  // Takes the ops of `block` (left empty, its capacity kept for the next block).
  void AddBlock(std::vector<TimedOp>* block);
  // Summarises what is held; the Arrivals of all blocks, oldest (GPU start) first.
  std::vector<Arrival> Finish();
  // For a reader that streams the Arrivals on (AnalysisStream): appends those made so far to
  // *out in the order they were made (completion order), all that are held too when `all`.
  void Drain(std::vector<Arrival>* out, bool all);
  // False once an op came after an op that completes later had been summarised: the Arrivals
  // are then not SummarizeRank's (a larger window, or the whole rank at once, would tell).
  bool in_order() const { return in_order_; }

 private:
  void Emit(size_t n);
  size_t window_;
  std::vector<TimedOp> held_;  // sorted in SummarizeRank's order
  RankSummarizer summarizer_;
  std::vector<Arrival> arrivals_;
  bool emitted_ = false;
  TimedOp last_emitted_;
  bool in_order_ = true;
};

// A communicator as a member sees it.
struct Communicator {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  int32_t size = 0;
  int32_t rank = -1;             // this rank's place in it
  std::vector<int32_t> members;  // global ranks by communicator rank; -1 where unknown
};

// A communicator's progress on one rank: the ring header's in-flight table.
struct Progress {
  uint64_t comm_id = 0;
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  int64_t oldest_issue_ns = 0;  // host time of the oldest op in flight; 0 when none
  // The oldest collective in flight (state kStarted or kQueued), when known.
  bool has_inflight = false;
  Arrival inflight;
  // For a kQueued op: the operation its stream is still working on ("GemmEx m=8192 n=8192 k=8192
  // launched 41.2 s ago"), as the hook described it; empty when unknown.
  std::string blocked_by;
  // The op its stream works on is a collective or a send/receive: the rank waits on other ranks
  // (a victim), so it is never a not_started culprit.
  bool blocked_by_communication = false;
  // That op's communicator (0 when unknown). A collective queued behind a send/receive of its own
  // communicator waits in that communicator's stall, not in another's (not downstream).
  uint64_t blocked_by_comm_id = 0;
  // The hang threshold a daemon had in force for the communicator when it took this progress
  // (HangCheck answers, hang summaries); 0 when unknown. When any member carries one, the
  // verdict uses the largest instead of deriving one from the arrivals given (which a daemon's
  // answer does not carry): one threshold for the live verdict and every later reading of it.
  int64_t threshold_ns = 0;
  int cadence_samples = 0;  // the completions that threshold came from (0: a first instance)
};

// Gaps between completions the cadence median is taken over (Options::cadence_window), and the
// send/receive completions per communicator a caller needs to keep for it (one more).
constexpr int kDefaultCadenceWindow = 64;
constexpr size_t kP2PCompletionsKept = kDefaultCadenceWindow + 1;

// The GPU end of one of a rank's send/receive ops: the cadence of communicators that carry no
// collectives (pipeline pairs).
struct P2PCompletion {
  uint64_t comm_id = 0;
  int64_t end_ns = 0;
};

// How a rank's process ended, when it did.
struct Exit {
  bool exited = false;
  // How it ended (kNone: its connection to the daemon was lost without the hook's marker);
  // nullopt when the source did not say (a summary written before the cause was sent).
  std::optional<format::ExitKind> cause;
  int32_t code = 0;  // exit status or signal number; -1 for connection_lost
  int64_t at_ns = 0;
  std::string crash_frame;  // the crash report's innermost frame (docs/crash.md); "" unknown
};

// "SIGSEGV" for 11 and the other common signals by name; nullptr for others.
const char* SignalName(int sig);

// The bytes of a Python exception's message that an exited verdict quotes.
constexpr size_t kMaxVerdictMessageBytes = 200;

// Exit::crash_frame of a crash report (docs/crash.md): where it crashed, named by the
// innermost frame of the application's (`app_frame`, stacktrace/frame_owner.h) with " via " and
// the innermost frame `frame` when that is another (a libc or CUDA library frame); `frame` alone
// when the stack holds no application frame; and for an uncaught Python exception
// " [uncaught TYPE: MESSAGE]" (the message on one line, cut to kMaxVerdictMessageBytes). The
// daemon and `xtimer analyze` both say it this way.
std::string CrashFrameText(const std::string& frame, const std::string& app_frame,
                           bool python_exception, const std::string& exception_type,
                           const std::string& exception_message);

// A span of the rank's host time: an NVTX range, or a Python span the hook's tracer sends as one
// (a traced function, a garbage collection, a data-loader wait; docs/format.md "Python spans").
// The readers copy them from the dump's NVTX entries or the daemon's NVTX history; what each is
// taken for is ClassifyHostSpan's (analysis/host_spans.h, docs/analysis.md "Host spans").
struct HostSpan {
  std::string name;
  std::string domain;     // the NVTX domain's name; "" for the default domain
  uint32_t category = 0;  // the NVTX category (in the Python domain: the span's kind)
  uint32_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct RankInput {
  int32_t rank = -1;   // global rank
  std::string node;
  int32_t pid = 0;
  int32_t device = -1;
  std::vector<Arrival> arrivals;     // completed collectives (SummarizeRank), oldest first
  std::vector<Progress> progress;    // one per communicator; may be empty offline
  std::vector<Communicator> comms;
  // Recent send/receive completions, oldest first (only the newest cadence_window + 1 per
  // communicator are used).
  std::vector<P2PCompletion> p2p_completions;
  Exit exit;
  // What the rank was last seen doing: its last completed op ("AllReduce comm 0x.. seq 57,
  // completed 42.0 s ago"), filled by the caller; quoted for culprits.
  std::string last_activity;
  int64_t last_activity_ns = 0;  // the last issue or completion of any op
  // Start times of the training steps the job marked (NVTX ranges named XTIMER_STEP_RANGE,
  // Python step functions), any order; empty when it marks none (docs/analysis.md "Steps").
  std::vector<int64_t> marked_step_starts_ns;
  // What the host did, any order (empty when the rank sends no NVTX or Python spans): names
  // what a straggler of cause host was doing before its late arrivals.
  std::vector<HostSpan> host_spans;
};

// Parallel groups, Megatron order tp-cp-ep-dp-pp: "tp2-pp2-dp2" (any order in the text; the
// layout order is tp, cp, ep, dp, pp, innermost first). Returns false with *error.
using Groups = ParallelGroups;  // util/parallel_groups.h: Megatron's rank order
inline bool ParseGroups(const std::string& text, Groups* groups, std::string* error) {
  return ParseParallelGroups(text, groups, error);
}
// The group kind ("tp", "dp", "pp", ...) whose ranks exactly form `members`, or "" if none.
std::string GroupKindOf(const Groups& groups, const std::vector<int32_t>& members);
// The pipeline stage of a global rank (0 when pp is 1).
int PipelineStage(const Groups& groups, int32_t rank);

struct Options {
  int64_t now_ns = 0;  // "now" on the inputs' clock (offline: the dump's time)
  // Adaptive hang threshold per communicator (docs/analysis.md "Threshold"), from the completion
  // times of its collectives (of its sends and receives when it has no collectives):
  // - with min_cadence_samples completions or more: the larger of cadence_factor x the median gap
  //   between completions (the last cadence_window gaps) and pause_factor x the longest gap seen
  //   after the first min_cadence_samples completions (warm-up is no pause)
  //   (a pause the job has shown before does not alarm), within [min_hang_ns, hang_timeout_ns];
  // - with fewer (a job's first steps): the larger of early_hang_ns and pause_factor x the
  //   longest gap seen, within the same bounds;
  // - with none: hang_timeout_ns (a first collective may connect for long), unless the stall
  //   carries evidence that needs no history (a member exited, the members' calls differ, or a
  //   member never issued the op while it has been idle for early_hang_ns): then early_hang_ns.
  int64_t hang_timeout_ns = int64_t{300} * 1000000000;
  int64_t min_hang_ns = int64_t{10} * 1000000000;
  int64_t early_hang_ns = int64_t{30} * 1000000000;
  double cadence_factor = 10;
  double pause_factor = 2;
  int min_cadence_samples = 8;
  int cadence_window = kDefaultCadenceWindow;
  // Stragglers: a rank is reported when it arrived last in at least min_share_last of a
  // communicator's instances (0.25: a rank late at one of two collectives a step on the same
  // communicator arrives last in half), its mean lateness is at least min_lateness_fraction of
  // the mean transfer time (and min_lateness_ns), and the wait it caused is at least
  // min_wait_share of its peers' time on the communicator (members - 1 times the span from its
  // first arrival to its last end): a lag that costs the others less is jitter, or does not
  // matter.
  double min_share_last = 0.25;
  double min_wait_share = 0.05;
  double min_lateness_fraction = 0.1;
  int64_t min_lateness_ns = 100000;
  // A link finding: a communicator's true bus bandwidth below link_slow_fraction of the median of
  // its peers (same size, operation and bytes) or of its own first instances.
  double link_slow_fraction = 0.7;
  // Signatures whose mean transfer time is below this are not judged for link findings (a few
  // microseconds are latency and timer noise, not bandwidth).
  int64_t min_link_transfer_ns = 50000;
  bool has_groups = false;
  Groups groups;
  // Stragglers and bandwidth normally need every member's arrival in an instance. The daemon,
  // which sees only its node's ranks, sets this to analyse instances in which every member
  // present in the inputs completed (lateness and waits among the local ranks only).
  bool partial_instances = false;
};

// The adaptive hang threshold of one communicator from the completion (GPU end) times of its
// instances, in any order, by the rules of Options (the median over the latest
// cadence_window + 1, the longest gap over all given); hang_timeout_ns when none is given.
int64_t HangThresholdNs(std::vector<int64_t> completion_ns, const Options& options);
// The same from one rank's arrivals (any communicators mixed; `comm_id` selects).
int64_t HangThresholdNs(const std::vector<Arrival>& arrivals, uint64_t comm_id,
                        const Options& options);

enum class HangKind : uint8_t {
  kNeverIssued = 1,
  kMismatch = 2,
  kStuckInCollective = 3,
  kExited = 4,
  kNotStarted = 5,
  // Some members are not among the inputs (other nodes, live) and the ranks given do not explain
  // the stall: the given ranks wait. The rules or `xtimer analyze --hosts` finish the verdict.
  kWaitingOnRemote = 6,
};
// "never_issued", "mismatch", "stuck_in_collective", "exited", "not_started",
// "waiting_on_remote".
const char* HangKindName(HangKind kind);

struct HangVerdict {
  HangKind kind = HangKind::kNeverIssued;
  uint64_t comm_id = 0;
  uint64_t seq = 0;      // the instance the waiting ranks wait in
  uint16_t op = 0;       // what the waiting (majority) ranks issued there
  std::vector<int32_t> culprit_ranks;  // empty for kStuckInCollective
  std::vector<int32_t> waiting_ranks;
  // kMismatch: which field differs, as Flight Recorder names them: "op", "count", "dtype", "root".
  std::string mismatch;
  double stalled_s = 0;    // since the communicator's last progress
  double threshold_s = 0;  // the adaptive threshold that was crossed
  // Readable facts, one sentence each: what each culprit was last doing, how it exited, the op
  // that blocks a stream, the differing fields per rank.
  std::vector<std::string> evidence;
  // Some member's op here is queued behind a stalled communication op (another communicator's
  // collective, a send/receive): this stall follows from another. Such a verdict that blames no
  // rank is dropped when a verdict that does not follow from another remains (its cause).
  bool downstream = false;
  // For a downstream verdict: the communicator of the op a member is queued behind (0: unknown).
  uint64_t upstream_comm_id = 0;
  // The waiting ranks wait in a send or receive (no collective in flight): `seq` and `op` are 0,
  // a send/receive has no sequence number shared by both peers.
  bool point_to_point = false;
  // kExited: when the first failure among the culprits happened (0 when unknown); verdicts of
  // that kind are ordered by it, the first failure heading.
  int64_t first_exit_ns = 0;
};

enum class Cause : uint8_t { kCompute = 1, kHost = 2, kLink = 3 };
const char* CauseName(Cause cause);  // "compute", "host", "link"

// One thing the host was doing while the GPU sat idle before a straggler's late arrivals.
struct HostActivity {
  std::string kind;  // "data_loading", "gc", "traced_function", "nvtx_range"
  std::string name;  // the span's name ("torch.utils.data...:__next__", "gc gen2", "load_batch")
  std::string text;  // how the verdict says it: "the data loader (…)", "GC generation 2", ...
  double seconds = 0;  // the idle time it is credited with, over those arrivals
};

struct Straggler {
  int32_t rank = -1;     // -1 for a link finding (no rank to blame)
  uint64_t comm_id = 0;  // the communicator it was found on (the slowest one for link)
  Cause cause = Cause::kCompute;
  double share_last = 0;        // instances it arrived last in / instances it took part in
  double mean_lateness_s = 0;   // its arrival minus the median arrival, mean over instances
  double wait_caused_s = 0;     // sum over instances of the others' waiting for it
  std::string group;            // "tp", "dp", ... when groups are given; else ""
  std::vector<std::string> evidence;
  // Cause host, when the rank gave host spans: what they covered of the GPU's idle time before
  // the arrivals it was last in (largest first, at most kMaxHostActivities), and that idle time.
  std::vector<HostActivity> host;
  double host_idle_s = 0;
};
constexpr size_t kMaxHostActivities = 3;

// Per rank, communicator, op and size: the sums behind observed and true bus bandwidth (bus
// bytes by opmath's factors). Consumers that combine rows (the daemon's gauges) add the sums,
// never the rates.
struct BusBandwidth {
  int32_t rank = -1;
  uint64_t comm_id = 0;
  uint16_t op = 0;
  uint64_t bytes = 0;
  uint64_t instances = 0;
  double own_bus_bytes = 0;       // bus bytes of the rank's instances
  double own_ns = 0;              // their GPU time on the rank (includes waiting for late ranks)
  double transfer_bus_bytes = 0;  // bus bytes of the instances with a transfer time
  double transfer_ns = 0;         // their transfer time: end - last arrival, summed

  // Bytes per second; 0 without time.
  double observed_bytes_per_second() const { return BytesPerSecond(own_bus_bytes, own_ns); }
  double true_bytes_per_second() const { return BytesPerSecond(transfer_bus_bytes, transfer_ns); }
  static double BytesPerSecond(double bytes, double ns) { return ns > 0 ? 1e9 * bytes / ns : 0; }
};

// Per rank: what it did in collectives.
struct RankStats {
  int32_t rank = -1;
  uint64_t instances = 0;     // complete instances it took part in
  uint64_t arrived_last = 0;
  double wait_s = 0;          // time it waited in collectives for later ranks
  double transfer_s = 0;      // time after the last arrival
  double wait_caused_s = 0;   // others' waiting it caused as the last arrival
};

// The hang threshold a verdict on a communicator would use now (HangThresholdNs over its
// members' completions, or the daemons' threshold carried in Progress).
struct CommThreshold {
  uint64_t comm_id = 0;
  int64_t threshold_ns = 0;
  int cadence_samples = 0;  // completions it was derived from (Progress::cadence_samples)
};

// A rank's marked steps (RankInput::marked_step_starts_ns: at least kMinStepPeriods steps).
struct RankStepStats {
  int32_t rank = -1;
  size_t count = 0;
  double median_s = 0, p10_s = 0, p90_s = 0;
};

struct Report {
  std::vector<HangVerdict> hangs;  // most severe first; empty: no hang
  std::vector<CommThreshold> thresholds;  // one per communicator, ascending id
  std::vector<Straggler> stragglers;  // worst first; empty: balanced
  std::vector<BusBandwidth> bus_bandwidth;
  std::vector<RankStats> ranks;
  // With groups: the pipeline stage that bounds the step (the stage of the rank stragglers that
  // caused the most wait), -1 without groups, pipeline or rank stragglers.
  int bounding_stage = -1;
  uint64_t instances = 0;  // complete collective instances analysed
  std::vector<RankStepStats> steps;  // ranks with marked steps, ascending rank
};

Report Analyze(const std::vector<RankInput>& ranks, const Options& options);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_ANALYSIS_H_

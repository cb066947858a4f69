#include "daemon/diagnosis/diagnosis.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <utility>

#include "analysis/host_spans.h"
#include "daemon/dumps/dump_writer.h"

namespace xtimer {
namespace daemon {
namespace {

using analysis::Arrival;
using analysis::RankInput;

// Carried slices of one rank and communicator (instances other local members have not completed).
constexpr size_t kMaxCarriedSlices = 8192;

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string CommText(uint64_t id) {
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

// "AllReduce on comm 0x... seq 57, completed 42.0 s ago" / "GemmEx, completed 3.1 s ago".
std::string ActivityText(const LastOp& last, int64_t now_ns) {
  if (!last.valid) return "no operation completed yet";
  std::string text = format::OperationName(static_cast<format::Operation>(last.op));
  if (last.comm_id != 0) {
    text += " on comm " + CommText(last.comm_id) + " seq " + std::to_string(last.seq);
  }
  char age[64];
  std::snprintf(age, sizeof age, ", completed %.1f s ago",
                std::max<double>(0, static_cast<double>(now_ns - last.end_ns) * 1e-9));
  return text + age;
}


// One local rank as the analysis library takes it.
RankInput InputOf(const ProcessSnapshot& p, const ProcessOps* ops, const CommMembers& members,
                  int64_t now_ns) {
  RankInput in;
  in.rank = p.rank;
  in.node = p.host;
  in.pid = p.pid;
  in.device = ops != nullptr ? ops->device : -1;
  // In-flight ages and idleness are measured up to the last time the daemon saw the process
  // (p.observed_ns): the analysis, which ages everything up to one `now`, gets those times
  // shifted by the lag. An exited process is frozen at its exit.
  const int64_t at_ns = p.exited ? std::min(now_ns, p.exited_ns) : now_ns;
  const int64_t lag_ns = std::max<int64_t>(0, at_ns - p.observed_ns);
  for (const CommSnapshot& c : p.comms) {
    if (c.comm_id == 0) continue;
    analysis::Progress pr;
    pr.comm_id = c.comm_id;
    pr.last_issued_seq = c.last_issued_seq;
    pr.last_completed_seq = c.last_completed_seq;
    if (c.oldest_launch_ns > 0 && c.oldest_launch_ns < p.observed_ns) {
      pr.oldest_issue_ns = c.oldest_launch_ns + lag_ns;
    }
    if (c.inflight.state != format::InflightState::kNone) {
      pr.has_inflight = true;
      pr.inflight = InflightArrival(c.comm_id, c.inflight);
      pr.blocked_by = c.blocked_by;
      pr.blocked_by_communication = format::QueuedBehindCommunication(c.inflight);
      if (pr.blocked_by_communication) pr.blocked_by_comm_id = c.inflight.blocker.comm_id;
    }
    if (in.device < 0) in.device = c.device;
    in.progress.push_back(std::move(pr));
    analysis::Communicator comm;
    comm.id = c.comm_id;
    comm.parent_id = c.parent_id;
    comm.size = c.comm_size;
    comm.rank = c.comm_rank;
    auto m = members.find({p.job, c.comm_id});
    if (m != members.end()) comm.members = m->second;
    in.comms.push_back(std::move(comm));
  }
  if (ops != nullptr) {
    for (const auto& c : ops->comms) {
      in.arrivals.insert(in.arrivals.end(), c.second.arrivals.begin(), c.second.arrivals.end());
      for (int64_t end : c.second.p2p_ends) in.p2p_completions.push_back({c.first, end});
    }
    std::sort(in.arrivals.begin(), in.arrivals.end(),
              [](const Arrival& a, const Arrival& b) { return a.start_ns < b.start_ns; });
    in.last_activity = ActivityText(ops->last, now_ns);
    // A reader that fell behind shifts the last activity of a live process by its lag.
    in.last_activity_ns = ops->last.valid ? ops->last.end_ns + (p.exited ? 0 : lag_ns) : 0;
  } else {
    in.last_activity = ActivityText(LastOp(), now_ns);
  }
  if (p.exited) {
    in.exit.exited = true;
    in.exit.cause = p.exit_cause.kind;
    in.exit.code = format::ExitCode(p.exit_cause);
    in.exit.at_ns = p.exited_ns;
    in.exit.crash_frame = p.crash_frame;
  }
  return in;
}

// The time the host spans before `in`'s arrivals may cover: from the earliest gap's begin to the
// latest arrival, on any communicator. False when it has none.
bool ArrivalWindow(const RankInput& in, int64_t* begin, int64_t* end) {
  *begin = INT64_MAX;
  *end = INT64_MIN;
  for (const Arrival& a : in.arrivals) {
    if (a.gap_begin_ns <= 0) continue;
    *begin = std::min(*begin, a.gap_begin_ns);
    *end = std::max(*end, a.start_ns);
  }
  return *begin < *end;
}

const std::string& TextOf(const std::map<uint32_t, std::string>& strings, uint32_t id) {
  static const std::string kNone;
  auto it = strings.find(id);
  return it == strings.end() ? kNone : it->second;
}

Arrival ArrivalOfSlice(uint64_t comm_id, int32_t comm_size, const Slice& s) {
  Arrival a;
  a.comm_id = comm_id;
  a.comm_size = comm_size;
  a.seq = s.seq;
  a.bytes = s.bytes;
  a.op = s.op;
  a.issue_ns = s.start_ns;
  a.start_ns = s.start_ns;
  a.end_ns = s.end_ns;
  return a;
}

}  // namespace

bool WaitsPast(const ProcessSnapshot& p, const CommSnapshot& c, int64_t threshold_ns) {
  return c.oldest_launch_ns > 0 && p.observed_ns - c.oldest_launch_ns > threshold_ns;
}

const CommLive* RankLive::Comm(uint64_t comm_id) const {
  for (const CommLive& c : comms) {
    if (c.comm_id == comm_id) return &c;
  }
  return nullptr;
}

const RankLive* LiveState::Find(uint64_t process_id, int device) const {
  auto match = [&](const RankLive& r) {
    return r.process.id == process_id && r.process.device == device;
  };
  for (const JobLive& j : jobs) {
    for (const RankLive& r : j.ranks) {
      if (match(r)) return &r;
    }
  }
  for (const RankLive& r : unranked) {
    if (match(r)) return &r;
  }
  return nullptr;
}

static_assert(static_cast<int>(format::InflightState::kStarted) ==
                      static_cast<int>(analysis::OpState::kStarted) &&
                  static_cast<int>(format::InflightState::kQueued) ==
                      static_cast<int>(analysis::OpState::kQueued) &&
                  static_cast<int>(format::InflightState::kIssued) ==
                      static_cast<int>(analysis::OpState::kIssued),
              "the ring's in-flight states are the analysis's");

analysis::Arrival InflightArrival(uint64_t comm_id, const format::InflightCollective& c) {
  Arrival a;
  a.comm_id = comm_id;
  a.seq = c.seq;
  a.count = c.count;
  a.bytes = c.bytes;
  a.op = c.op;
  a.dtype = c.dtype;
  // The values match (format/ring.h); Validate bounded the state.
  a.state = static_cast<analysis::OpState>(c.state);
  a.root = c.root;
  a.comm_size = c.comm_size;
  a.issue_ns = c.launch_ns;
  a.start_ns = c.gpu_start_ns;
  return a;
}

LiveDiagnosis::LiveDiagnosis(Aggregator* aggregator, DiagnosisOptions options,
                             std::function<int64_t()> now,
                             std::function<void(LiveState*)> on_pass)
    : aggregator_(aggregator),
      options_(options),
      now_(std::move(now)),
      on_pass_(std::move(on_pass)),
      ops_(options.ring_size, options.max_comms),
      latest_(std::make_shared<LiveState>()) {
  tap_id_ = aggregator_->AddOpTap(
      [this](ProcessId id, const TapOp* ops, size_t n) { ops_.AddAll(id, ops, n); });
}

LiveDiagnosis::~LiveDiagnosis() {
  Stop();
  aggregator_->RemoveOpTap(tap_id_);
}

void LiveDiagnosis::Start() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(thread_mu_);
    while (!stop_) {
      lock.unlock();
      RunOnce();
      lock.lock();
      cv_.wait_for(lock, std::chrono::nanoseconds(options_.interval_ns), [this] { return stop_; });
    }
  });
}

void LiveDiagnosis::Stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(thread_mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

std::shared_ptr<const LiveState> LiveDiagnosis::Latest() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return latest_;
}

analysis::Options LiveDiagnosis::AnalysisOptions(int64_t now_ns) const {
  analysis::Options o;
  o.now_ns = now_ns;
  o.hang_timeout_ns = options_.hang_timeout_ns;
  o.min_hang_ns = std::min(options_.min_hang_ns, options_.hang_timeout_ns);
  o.early_hang_ns = std::min(options_.early_hang_ns, options_.hang_timeout_ns);
  o.cadence_factor = options_.cadence_factor;
  o.partial_instances = true;  // the other nodes' members are not among the inputs
  return o;
}

void LiveDiagnosis::CountInstances(const std::string& job, const std::vector<RankLive>& ranks,
                                   const std::map<RankKey, ProcessOps>& ops) {
  // Each communicator's live local members and their new slices.
  std::map<uint64_t, std::vector<const RankLive*>> members;
  for (const RankLive& r : ranks) {
    auto o = ops.find(r.process.key());
    if (o == ops.end()) continue;
    for (const auto& c : o->second.comms) {
      if (r.process.exited) continue;  // counted among the live members only
      auto& carried = pending_[{r.process.key(), c.first}];
      carried.insert(carried.end(), c.second.new_slices.begin(), c.second.new_slices.end());
      if (carried.size() > kMaxCarriedSlices) {
        carried.erase(carried.begin(), carried.end() - kMaxCarriedSlices);
      }
      members[c.first].push_back(&r);
    }
  }
  const analysis::Options o = AnalysisOptions(0);
  for (const auto& m : members) {
    const uint64_t comm = m.first;
    uint64_t& counted = counted_seq_[{job, comm}];
    uint64_t hi = UINT64_MAX;
    for (const RankLive* r : m.second) {
      uint64_t top = 0;
      for (const Slice& s : pending_[{r->process.key(), comm}]) top = std::max(top, s.seq);
      hi = std::min(hi, top);
    }
    if (m.second.size() < 2) {  // nobody to compare with on this node
      pending_.erase({m.second.front()->process.key(), comm});
      continue;
    }
    if (hi <= counted) continue;
    std::vector<RankInput> inputs;
    for (const RankLive* r : m.second) {
      RankInput in;
      in.rank = r->input.rank;
      int32_t size = 0;
      for (const CommSnapshot& c : r->process.comms) {
        if (c.comm_id == comm) size = c.comm_size;
      }
      auto& carried = pending_[{r->process.key(), comm}];
      for (const Slice& s : carried) {
        if (s.seq > counted && s.seq <= hi) in.arrivals.push_back(ArrivalOfSlice(comm, size, s));
      }
      carried.erase(std::remove_if(carried.begin(), carried.end(),
                                   [hi](const Slice& s) { return s.seq <= hi; }),
                    carried.end());
      inputs.push_back(std::move(in));
    }
    const analysis::Report report = analysis::Analyze(inputs, o);
    for (const analysis::RankStats& s : report.ranks) {
      for (const RankLive* r : m.second) {
        if (r->input.rank != s.rank) continue;
        SharedCounters& c = shared_[{r->process.key(), comm}];
        c.arrived_last += s.arrived_last;
        c.wait_s += s.wait_s;
        c.transfer_s += s.transfer_s;
        c.wait_caused_s += s.wait_caused_s;
      }
    }
    counted = hi;
  }
}

bool LiveDiagnosis::AddHostSpans(const analysis::Report& report,
                                 const std::vector<RankLive>& ranks,
                                 std::vector<RankInput>* inputs) const {
  bool any = false;
  for (const analysis::Straggler& s : report.stragglers) {
    if (s.cause != analysis::Cause::kHost || s.rank < 0) continue;
    for (size_t i = 0; i < ranks.size() && i < inputs->size(); ++i) {
      RankInput& in = (*inputs)[i];
      int64_t begin = 0, end = 0;
      if (in.rank != s.rank || !in.host_spans.empty()) continue;
      if (!ArrivalWindow(in, &begin, &end)) continue;
      std::map<uint32_t, std::string> strings;
      analysis::NvtxSpanBuilder spans;
      for (const format::NvtxRecord& e :
           aggregator_->NvtxEvents(ranks[i].process.id, begin, end, &strings)) {
        spans.Add(e.event, e.range_id, e.start_ns, e.end_ns, e.tid, e.category,
                  TextOf(strings, e.name_id), TextOf(strings, e.domain_id));
      }
      in.host_spans = spans.Take();
      any = any || !in.host_spans.empty();
    }
  }
  return any;
}

void LiveDiagnosis::AddCommLive(const std::map<RankKey, ProcessOps>& ops,
                                const std::vector<analysis::CommThreshold>& thresholds,
                                RankLive* r) const {
  std::set<uint64_t> comm_ids;
  for (const CommSnapshot& c : r->process.comms) {
    if (c.comm_id != 0) comm_ids.insert(c.comm_id);
  }
  auto o = ops.find(r->process.key());
  if (o != ops.end()) {
    for (const auto& c : o->second.comms) comm_ids.insert(c.first);
  }
  for (uint64_t id : comm_ids) {
    CommLive cl;
    cl.comm_id = id;
    auto t = std::lower_bound(
        thresholds.begin(), thresholds.end(), id,
        [](const analysis::CommThreshold& c, uint64_t i) { return c.comm_id < i; });
    int64_t threshold_ns = options_.hang_timeout_ns;
    if (t != thresholds.end() && t->comm_id == id) {
      threshold_ns = t->threshold_ns;
      cl.cadence_samples = t->cadence_samples;
    }
    cl.threshold_s = static_cast<double>(threshold_ns) * 1e-9;
    for (const CommSnapshot& c : r->process.comms) {
      if (c.comm_id == id) cl.waiting = WaitsPast(r->process, c, threshold_ns);
    }
    r->waiting = r->waiting || cl.waiting;
    if (o != ops.end()) {
      auto c = o->second.comms.find(id);
      if (c != o->second.comms.end()) cl.own = c->second.counters;
    }
    auto s = shared_.find({r->process.key(), id});
    if (s != shared_.end()) cl.shared = s->second;
    r->comms.push_back(cl);
  }
}

void LiveDiagnosis::RunOnce() {
  std::lock_guard<std::mutex> run(run_mu_);
  const int64_t cpu0 = ThreadCpuNs();
  const int64_t now = now_();
  const Snapshot snap = aggregator_->TakeSnapshot(now, /*with_series=*/false);
  std::set<RankKey> ids;
  for (const ProcessSnapshot& p : snap.processes) ids.insert(p.key());
  size_t forgotten = 0;
  const std::map<RankKey, ProcessOps> ops = ops_.Copy(ids, &forgotten);
  // Ranks that left free their rings here, on this thread: the aggregator's next periodic pass
  // hands that memory (and this pass's copies) back to the system.
  if (forgotten > 0) aggregator_->NoteFreed(forgotten);
  const CommMembers members = CommMembersOf(snap);

  std::map<std::string, std::vector<RankLive>> by_job;
  auto state = std::make_shared<LiveState>();
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.hidden) continue;
    auto o = ops.find(p.key());
    RankLive r;
    r.process = p;
    r.input = InputOf(p, o == ops.end() ? nullptr : &o->second, members, now);
    if (p.rank >= 0) {
      r.steps = steps_.Update(p.key(), r.input.arrivals);
      by_job[p.job].push_back(std::move(r));
    } else {
      AddCommLive(ops, {}, &r);
      state->unranked.push_back(std::move(r));
    }
  }

  state->now_ns = now;
  const analysis::Options options = AnalysisOptions(now);
  state->early_hang_ns = options.early_hang_ns;
  for (auto& entry : by_job) {
    std::vector<RankLive>& ranks = entry.second;
    std::sort(ranks.begin(), ranks.end(),
              [](const RankLive& a, const RankLive& b) { return a.input.rank < b.input.rank; });
    CountInstances(entry.first, ranks, ops);
    std::vector<RankInput> inputs;
    inputs.reserve(ranks.size());
    for (const RankLive& r : ranks) inputs.push_back(r.input);
    JobLive job;
    job.job = entry.first;
    job.report = analysis::Analyze(inputs, options);
    // A straggler of cause host: again with what its host was doing (rare; the history is read
    // only then).
    if (AddHostSpans(job.report, ranks, &inputs)) {
      job.report = analysis::Analyze(inputs, options);
      // Kept for HangCheck, so that `xtimer analyze --hosts` names what those hosts did too.
      for (size_t i = 0; i < ranks.size(); ++i) {
        ranks[i].input.host_spans = std::move(inputs[i].host_spans);
      }
    }
    for (RankLive& r : ranks) AddCommLive(ops, job.report.thresholds, &r);
    // The published state keeps what HangCheck and the metrics read: the arrivals (at most
    // LiveOps' 256 per communicator, for HangCheck's `recent`), not the send/receive ends.
    for (RankLive& r : ranks) {
      r.input.p2p_completions.clear();
      r.input.p2p_completions.shrink_to_fit();
    }
    job.ranks = std::move(ranks);
    state->jobs.push_back(std::move(job));
  }
  // Forget the counting state of processes the aggregator dropped.
  for (auto it = shared_.begin(); it != shared_.end();) {
    it = ids.count(it->first.first) ? std::next(it) : shared_.erase(it);
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    it = ids.count(it->first.first) ? std::next(it) : pending_.erase(it);
  }
  steps_.Retain(ids);
  for (auto it = counted_seq_.begin(); it != counted_seq_.end();) {
    it = by_job.count(it->first.first) ? std::next(it) : counted_seq_.erase(it);
  }
  state->passes = ++passes_;
  if (on_pass_) on_pass_(state.get());
  state->pass_cpu_s = static_cast<double>(ThreadCpuNs() - cpu0) * 1e-9;
  std::lock_guard<std::mutex> lock(state_mu_);
  latest_ = std::move(state);
}

}  // namespace daemon
}  // namespace xtimer

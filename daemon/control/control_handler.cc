#include "daemon/control/control_handler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "daemon/diagnosis/hang_check.h"
#include "format/record.h"
#include "format/ring.h"
#include "proto/wire_enums.h"
#include "timeline/format.h"
#include "util/process_name.h"

namespace xtimer {
namespace daemon {
namespace {

CallStatus Invalid(const std::string& m) { return CallStatus{Code::kInvalidArgument, m}; }

// The file and rank identity a dump file and a stack file share (DumpFile, StackFile).
template <typename Info, typename Proto>
void FillFileIdentity(const Info& f, Proto* out) {
  out->set_path(f.path);
  out->set_job(f.job);
  out->set_host(f.host);
  out->set_pid(f.pid);
  out->set_rank(f.rank);
  out->set_local_rank(f.local_rank);
  out->set_world_size(f.world_size);
}

void FillFile(const DumpFileInfo& f, DumpFile* out) {
  FillFileIdentity(f, out);
  out->set_events(f.events);
  out->set_error(f.error);
  out->set_captured(f.captured);
  out->set_requested(f.requested);
  out->set_ended(f.ended);
  out->set_fell_short(f.fell_short);
}

// "0-3 5" for {0, 1, 2, 3, 5}; "?" for ranks that are unknown (-1).
std::string RankRanges(const std::set<int>& ranks) {
  std::string s;
  for (auto it = ranks.begin(); it != ranks.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != ranks.end() && first >= 0 && *it == last + 1; ++it) last = *it;
    s += (s.empty() ? "" : " ") + (first < 0 ? std::string("?") : std::to_string(first));
    if (last != first) s += "-" + std::to_string(last);
  }
  return s;
}

// Why the `jobs` and `ranks` of `r` select no registered process, or "" when one matches (or
// there are none: a daemon with no process answers a dump of everything with no file, a state
// rather than a mistake): the jobs and ranks this daemon has, so that a typo in a job name or a
// rank list is seen at once.
std::string NoMatchReason(const Snapshot& snap, const DumpRequest& r) {
  if (r.jobs.empty() && r.ranks.empty()) return "";
  std::map<std::string, std::set<int>> jobs;
  for (const ProcessSnapshot& p : snap.processes) {
    if ((r.jobs.empty() || r.jobs.count(p.job)) && (r.ranks.empty() || r.ranks.count(p.rank))) {
      return "";
    }
    jobs[p.job].insert(p.rank);
  }
  if (jobs.empty()) return "no process is registered with this daemon: nothing matches";
  std::string asked;
  for (const std::string& j : r.jobs) asked += (asked.empty() ? "jobs '" : ", '") + j + "'";
  if (!r.ranks.empty()) asked += (asked.empty() ? "ranks " : " and ranks ") + RankRanges(r.ranks);
  std::string has;
  for (const auto& j : jobs) {
    has += (has.empty() ? "'" : ", '") + j.first + "' (ranks " + RankRanges(j.second) + ")";
  }
  return "no registered process matches " + asked + "; this daemon has job(s) " + has +
         ": check --job and --ranks (xtimer dump), jobs and ranks (DumpKernelTrace)";
}

// The ranks and jobs of a request (DumpKernelTrace, DumpStack) into r->ranks and r->jobs.
template <typename Ranks, typename Jobs>
CallStatus ParseSelection(const Ranks& ranks, const Jobs& jobs, DumpRequest* r) {
  if (static_cast<size_t>(ranks.size()) > kMaxFilterEntries) {
    return Invalid("ranks: at most " + std::to_string(kMaxFilterEntries) + " entries");
  }
  if (static_cast<size_t>(jobs.size()) > kMaxFilterEntries) {
    return Invalid("jobs: at most " + std::to_string(kMaxFilterEntries) + " entries");
  }
  for (int rank : ranks) {
    if (rank < 0 || rank >= (1 << 24)) {
      return Invalid("ranks: " + std::to_string(rank) + " is not a global rank (0 .. 16777215)");
    }
    r->ranks.insert(rank);
  }
  for (const std::string& job : jobs) {
    if (job.empty() || job.size() > 256) return Invalid("jobs: each entry must be 1-256 bytes");
    r->jobs.insert(job);
  }
  return CallStatus();
}

}  // namespace

ControlHandler::ControlHandler(Aggregator* aggregator, DumpManager* dumps, ControlOptions options)
    : aggregator_(aggregator), dumps_(dumps), options_(std::move(options)) {}

CallStatus ControlHandler::Validate(const DumpKernelTraceRequest& q, DumpRequest* out) const {
  const int64_t now = options_.now_ns();
  if (q.dump_count() < 0 || q.dump_count() > kMaxDumpCount) {
    return Invalid("dump_count: must be in [0, " + std::to_string(kMaxDumpCount) + "], got " +
                   std::to_string(q.dump_count()));
  }
  if (q.history() < 0 || q.history() > kMaxDumpHistory) {
    return Invalid("history: must be in [0, " + std::to_string(kMaxDumpHistory) + "], got " +
                   std::to_string(q.history()));
  }
  if (!std::isfinite(q.duration_s()) || q.duration_s() < 0 ||
      q.duration_s() > kMaxDumpDurationS) {
    return Invalid("duration_s: must be in [0, " + std::to_string(int(kMaxDumpDurationS)) +
                   "] seconds");
  }
  if (q.dump_count() == 0 && q.duration_s() == 0 && q.history() == 0) {
    return Invalid("dump_count: one of dump_count, duration_s or history must be > 0");
  }
  if (q.dump_kernel_type() < 0 || q.dump_kernel_type() > 7) {
    return Invalid("dump_kernel_type: a mask of bits 0 (matmul), 1 (NCCL), 2 (host and memory "
                   "ops); must be in [0, 7] (0 = all), got " +
                   std::to_string(q.dump_kernel_type()));
  }
  const int64_t now_s = now / 1000000000;
  if (q.dump_time() < 0 || q.dump_time() > now_s + kMaxDumpTimeAheadS) {
    return Invalid("dump_time: Unix seconds, at most " + std::to_string(kMaxDumpTimeAheadS) +
                   " s ahead (now " + std::to_string(now_s) + "), got " +
                   std::to_string(q.dump_time()));
  }
  const bool capture = q.dump_count() > 0 || q.duration_s() > 0;
  if (capture && q.dump_time() != 0 && q.dump_time() < now_s - kMaxDumpTimeBehindS) {
    return Invalid("dump_time: " + std::to_string(q.dump_time()) + " is " +
                   std::to_string(now_s - q.dump_time()) +
                   " s in the past; a capture (dump_count, duration_s) takes ops as they arrive "
                   "from dump_time on. For ops that already ran, ask for the records the daemon "
                   "keeps: history: N (e.g. {\"history\": 10000}; xtimer dump --history N)");
  }
  CallStatus cs;
  if (!std::isfinite(q.timeout_s()) || q.timeout_s() < 0 || q.timeout_s() > kMaxCaptureWaitS) {
    return Invalid("timeout_s: must be in [0, " + std::to_string(kMaxCaptureWaitS) +
                   "] seconds (0: " + std::to_string(kMaxCaptureWaitS) + ")");
  }
  if (!std::isfinite(q.idle_timeout_s()) || q.idle_timeout_s() < 0 ||
      q.idle_timeout_s() > kMaxCaptureWaitS) {
    return Invalid("idle_timeout_s: must be in [0, " + std::to_string(kMaxCaptureWaitS) +
                   "] seconds (0: " + std::to_string(static_cast<int>(kDefaultCaptureIdleS)) +
                   ")");
  }
  DumpRequest r;
  cs = ParseSelection(q.ranks(), q.jobs(), &r);
  if (!cs.ok()) return cs;
  std::string error;
  if (!ResolveDumpPath(dumps_->root(), q.dump_path(), &r.dir, &error)) return Invalid(error);
  r.dump_time_ns = q.dump_time() == 0 ? now : q.dump_time() * 1000000000;
  r.count = q.dump_count();
  r.duration_s = q.duration_s();
  if (q.timeout_s() > 0) r.timeout_s = q.timeout_s();
  if (q.idle_timeout_s() > 0) r.idle_s = q.idle_timeout_s();
  r.history = q.history();
  r.kinds = static_cast<uint32_t>(q.dump_kernel_type());
  r.reset = q.reset();
  *out = std::move(r);
  return CallStatus();
}

namespace {

// Access (docs/security.md "Peers and identity"): the jobs a caller that is not privileged may
// see are those with a process its uid registered (a job label belongs to one uid).
std::set<std::string> JobsOf(const Caller& caller, const Snapshot& snap) {
  std::set<std::string> jobs;
  if (caller.remote) return jobs;
  for (const ProcessSnapshot& p : snap.processes) {
    if (p.uid == caller.uid) jobs.insert(p.job);
  }
  return jobs;
}

std::string WhoIs(const Caller& caller) {
  return caller.remote ? std::string("a remote caller") : "uid " + std::to_string(caller.uid);
}

CallStatus Denied(const Caller& caller, const std::string& what) {
  if (caller.remote) {
    return CallStatus{Code::kPermissionDenied,
                      what + " over the network needs xtimerd --control-allow-remote (the "
                             "caller's user cannot be known; docs/security.md)"};
  }
  return CallStatus{Code::kPermissionDenied,
                    what + ": " + WhoIs(caller) + " may use only the jobs its own processes "
                           "registered on this node (root may use any; docs/security.md)"};
}

// Narrows r.jobs to the caller's own, or says why it may not dump.
CallStatus RestrictDump(const Caller& caller, const Snapshot& snap, DumpRequest* r) {
  if (caller.privileged) return CallStatus();
  if (caller.remote) return Denied(caller, "a dump");
  if (r->reset) return Denied(caller, "reset (it cancels another caller's dump)");
  const std::set<std::string> own = JobsOf(caller, snap);
  for (const std::string& job : r->jobs) {
    if (own.count(job) == 0) return Denied(caller, "a dump of job '" + job + "'");
  }
  if (r->jobs.empty()) {
    if (own.empty()) return Denied(caller, "a dump (no job of " + WhoIs(caller) + " runs here)");
    r->jobs = own;
  }
  return CallStatus();
}

// Drops the processes of jobs the caller may not see.
void RestrictSnapshot(const Caller& caller, Snapshot* snap) {
  if (caller.privileged) return;
  const std::set<std::string> own = JobsOf(caller, *snap);
  auto& ps = snap->processes;
  ps.erase(std::remove_if(ps.begin(), ps.end(),
                          [&](const ProcessSnapshot& p) { return own.count(p.job) == 0; }),
           ps.end());
}

}  // namespace

CallStatus ControlHandler::DumpKernelTrace(const DumpKernelTraceRequest& request,
                                           DumpKernelTraceResponse* response,
                                           const Caller& caller) {
  DumpRequest r;
  CallStatus cs = Validate(request, &r);
  if (!cs.ok()) return cs;
  const Snapshot snap = aggregator_->TakeSnapshot(options_.now_ns(), /*with_series=*/false);
  cs = RestrictDump(caller, snap, &r);
  if (!cs.ok()) return cs;
  r.owner_uid = caller.uid;
  const std::string no_match = NoMatchReason(snap, r);
  if (!no_match.empty()) return CallStatus{Code::kNotFound, no_match};
  DumpStatus st;
  std::string error;
  switch (dumps_->Start(r, &st, &error)) {
    case DumpError::kBusy:
      return CallStatus{Code::kFailedPrecondition, error};
    case DumpError::kIo:
      return CallStatus{Code::kInternal, "dump failed: " + error};
    case DumpError::kNone:
      break;
  }
  response->set_state(st.state);
  response->set_dump_id(st.id);
  response->set_dump_dir(st.dir);
  response->set_dump_time(st.dump_time_ns / 1000000000);
  response->set_deadline(static_cast<double>(st.deadline_ns) * 1e-9);
  response->set_node(options_.node);
  for (const DumpFileInfo& f : st.files) FillFile(f, response->add_files());
  std::string msg;
  if (st.files.empty()) {
    msg = "no registered process matches: nothing to dump";
  } else if (st.state == "capturing") {
    msg = std::to_string(st.files.size()) + " files will be written in " + st.dir +
          "/<job>/ when the capture ends (from dump_time " +
          std::to_string(st.dump_time_ns / 1000000000) + ", by " +
          std::to_string(st.deadline_ns / 1000000000) + " at the latest)";
  } else {
    uint64_t events = 0;
    for (const DumpFileInfo& f : st.files) events += f.events;
    msg = std::to_string(st.files.size()) + " files written in " + st.dir + "/<job>/ (" +
          std::to_string(events) + " events)";
    const std::string fell_short = DescribeShortRanks(st.files);
    if (!fell_short.empty()) {
      msg += "; fewer than " + std::to_string(static_cast<int>(kShortFraction * 100)) +
             "% of dump_count: " + fell_short;
    }
  }
  response->set_message(msg);
  return cs;
}

CallStatus ControlHandler::DumpStack(const DumpStackRequest& q, DumpStackResponse* response,
                                     const Caller& caller) {
  if (options_.stacks == nullptr) {
    return CallStatus{Code::kFailedPrecondition, "stack capture is not running in this daemon"};
  }
  if (!std::isfinite(q.timeout_s()) || q.timeout_s() < 0 ||
      q.timeout_s() * 1000 > kMaxStackTimeoutMs) {
    return Invalid("timeout_s: must be in [0, " + std::to_string(kMaxStackTimeoutMs / 1000) +
                   "] seconds (0: " + std::to_string(kDefaultStackTimeoutMs / 1000) + ")");
  }
  DumpRequest r;
  CallStatus cs = ParseSelection(q.ranks(), q.jobs(), &r);
  if (!cs.ok()) return cs;
  std::string error;
  if (!ResolveDumpPath(dumps_->root(), q.dump_path(), &r.dir, &error)) return Invalid(error);
  const Snapshot snap = aggregator_->TakeSnapshot(options_.now_ns(), /*with_series=*/false);
  cs = RestrictDump(caller, snap, &r);
  if (!cs.ok()) return cs;
  const std::string no_match = NoMatchReason(snap, r);
  if (!no_match.empty()) return CallStatus{Code::kNotFound, no_match};
  StackDumpRequest sr;
  sr.dir = r.dir;
  sr.ranks = r.ranks;
  sr.jobs = r.jobs;
  if (q.timeout_s() > 0) sr.timeout_ms = static_cast<int>(q.timeout_s() * 1000);
  int written = 0;
  std::string missing;
  for (const StackFileInfo& f : options_.stacks->Capture(sr)) {
    StackFile* out = response->add_files();
    FillFileIdentity(f, out);
    out->set_threads(f.threads);
    out->set_outcome(f.outcome);
    out->set_error(f.error);
    if (q.with_content()) out->set_content(f.content);
    if (f.outcome == "written" && !f.path.empty()) {
      ++written;
    } else {
      const bool ranked = f.rank >= 0 && f.world_size > f.rank;
      missing += (missing.empty() ? "" : "; ") +
                 (ranked ? "rank " + std::to_string(f.rank) : RanklessName(f.pid, -1)) + ": " +
                 (f.error.empty() ? f.outcome : f.error);
    }
  }
  response->set_dump_dir(r.dir);
  response->set_node(options_.node);
  std::string msg = std::to_string(written) + " of " + std::to_string(response->files_size()) +
                    " ranks' stacks written in " + r.dir + "/<job>/";
  if (!missing.empty()) msg += " (without stacks: " + missing.substr(0, 2000) + ")";
  response->set_message(msg);
  return CallStatus();
}

CallStatus ControlHandler::Status(const StatusRequest&, StatusResponse* out,
                                  const Caller& caller) {
  const int64_t now = options_.now_ns();
  Snapshot snap = aggregator_->TakeSnapshot(now);
  RestrictSnapshot(caller, &snap);
  out->set_version(options_.version);
  out->set_record_version(format::kRecordVersion);
  out->set_ring_version(format::kRingVersion);
  out->set_timeline_version(timeline::kTimelineVersion);
  out->set_node(options_.node);
  out->set_uptime_s(static_cast<double>(now - options_.start_ns) * 1e-9);
  out->set_dump_root(dumps_->root());
  out->set_registrations(snap.registrations);
  out->set_registrations_rejected(snap.registrations_rejected);
  std::set<std::string> jobs;
  std::set<int> ranks;
  // Whether a rank waits is the live diagnosis's decision (its latest pass), as HangCheck and
  // the metrics show it.
  const std::shared_ptr<const LiveState> live =
      options_.diagnosis != nullptr ? options_.diagnosis->Latest() : nullptr;
  for (const ProcessSnapshot& p : snap.processes) {
    const RankLive* decision = live != nullptr ? live->Find(p.id, p.device) : nullptr;
    ProcessInfo* pi = out->add_processes();
    pi->set_pid(p.pid);
    pi->set_job(p.job);
    pi->set_host(p.host);
    pi->set_pod(p.pod);
    pi->set_rank(p.rank);
    pi->set_local_rank(p.local_rank);
    pi->set_world_size(p.world_size);
    pi->set_device(p.device);
    pi->set_up(p.up);
    pi->set_hang(decision != nullptr && decision->waiting);
    pi->set_records_written(p.written);
    pi->set_records_dropped(p.dropped);
    pi->set_records_invalid(p.invalid);
    pi->set_records_lost(p.lost);
    pi->set_ring_fill(p.fill);
    pi->set_heartbeat_age_s(AgeSeconds(now, p.heartbeat_ns));
    pi->set_history(p.history);
    pi->set_exited(p.exited);
    if (p.exited) {
      pi->set_exit_cause(proto::ExitCauseCodeOf(p.exit_cause.kind));
      pi->set_exit_code(format::ExitCode(p.exit_cause));
      pi->set_exited_age_s(std::max(0.0, static_cast<double>(now - p.exited_ns) * 1e-9));
    }
    for (const CommSnapshot& c : p.comms) {
      if (c.comm_id == 0) continue;
      FillCommProgress(p, c, decision != nullptr ? decision->Comm(c.comm_id) : nullptr, now,
                       pi->add_comms());
    }
    jobs.insert(p.job);
    if (p.rank >= 0) ranks.insert(p.rank);
  }
  for (const auto& j : jobs) out->add_jobs(j);
  for (int r : ranks) out->add_ranks(r);
  const DumpStatus d = dumps_->Current();
  DumpState* ds = out->mutable_last_dump();
  ds->set_state(d.state);
  ds->set_dump_id(d.id);
  ds->set_dump_dir(d.dir);
  ds->set_dump_time(d.dump_time_ns / 1000000000);
  ds->set_deadline(static_cast<double>(d.deadline_ns) * 1e-9);
  for (const DumpFileInfo& f : d.files) FillFile(f, ds->add_files());
  return CallStatus();
}

CallStatus ControlHandler::HangCheck(const HangCheckRequest& request,
                                     HangCheckResponse* response, const Caller& caller) {
  if (options_.diagnosis == nullptr) {
    return CallStatus{Code::kFailedPrecondition, "the live diagnosis is not running"};
  }
  if (request.job().size() > 256) return Invalid("job: at most 256 bytes");
  if (caller.remote && !caller.privileged) return Denied(caller, "HangCheck");
  std::set<std::string> own;
  if (!caller.privileged) {
    own = JobsOf(caller, aggregator_->TakeSnapshot(options_.now_ns(), /*with_series=*/false));
    if (!request.job().empty() && own.count(request.job()) == 0) {
      return Denied(caller, "HangCheck of job '" + request.job() + "'");
    }
  }
  FillHangCheck(*options_.diagnosis->Latest(), request, options_.node, response);
  if (caller.privileged) return CallStatus();
  auto* verdicts = response->mutable_verdicts();
  for (int i = verdicts->size() - 1; i >= 0; --i) {
    if (own.count(verdicts->Get(i).job()) == 0) verdicts->DeleteSubrange(i, 1);
  }
  auto* ranks = response->mutable_ranks();
  for (int i = ranks->size() - 1; i >= 0; --i) {
    if (own.count(ranks->Get(i).job()) == 0) ranks->DeleteSubrange(i, 1);
  }
  return CallStatus();
}

}  // namespace daemon
}  // namespace xtimer

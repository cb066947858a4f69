#include "cli/readers/rank_progress.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cli/readers/job_inputs.h"
#include "cli/readers/rank_clock.h"
#include "proto/wire_arrival.h"
#include "proto/wire_enums.h"

namespace xtimer {
namespace cli {
namespace {

using proto::CommIdOf;
using proto::TimeOfAge;

analysis::Communicator* FindComm(analysis::RankInput* in, uint64_t id) {
  for (analysis::Communicator& c : in->comms) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

// Each answer's clock: its daemon's node name, numbered when several daemons share one (emulated
// nodes on one machine, or hosts that do not set a name).
std::vector<std::string> ClockNames(const std::vector<HangCheckResponse>& answers) {
  std::map<std::string, int> count;
  for (const HangCheckResponse& a : answers) ++count[a.node()];
  std::map<std::string, int> seen;
  std::vector<std::string> names;
  for (const HangCheckResponse& a : answers) {
    const int n = ++seen[a.node()];
    names.push_back(count[a.node()] > 1 ? a.node() + "#" + std::to_string(n) : a.node());
  }
  return names;
}

// Puts the ranks' times, each on its own answer's clock (clock_of[i] names the clock of
// out->ranks[i], now_of each clock's `now`), on one clock: the clocks that share collectives are
// aligned on their ends (their offsets are the clocks' own, whatever moment each daemon's pass
// ran); a clock that shares none is taken as of the latest aligned pass (the latest pass when
// none is aligned), the common instant the answers stand for and the analysis's now.
void OnOneClock(const std::vector<std::string>& clock_of,
                const std::map<std::string, int64_t>& now_of, int64_t latest_now_ns,
                LiveInput* out) {
  const bool any_arrivals = std::any_of(out->ranks.begin(), out->ranks.end(),
                                        [](const analysis::RankInput& in) {
                                          return !in.arrivals.empty();
                                        });
  std::map<std::string, std::vector<timeline::CollectiveEnd>> ends;
  for (size_t i = 0; i < out->ranks.size(); ++i) {
    timeline::MergeEnds(&ends[clock_of[i]], EndsOf(out->ranks[i]));
  }
  std::vector<bool> aligned(ends.size(), false);
  std::vector<std::pair<std::string, int64_t>> offsets;
  if (any_arrivals) {
    offsets = DomainOffsets(std::move(ends), &out->warnings, &aligned);
  } else {
    for (const auto& e : ends) offsets.push_back({e.first, 0});
  }
  bool any_aligned = false;
  int64_t instant = latest_now_ns;
  for (size_t d = 0; d < offsets.size(); ++d) {
    if (!aligned[d]) continue;
    const int64_t at = now_of.at(offsets[d].first) + offsets[d].second;
    instant = any_aligned ? std::max(instant, at) : at;
    any_aligned = true;
  }
  for (size_t d = 0; d < offsets.size(); ++d) {
    if (!aligned[d]) offsets[d].second = instant - now_of.at(offsets[d].first);
  }
  const std::map<std::string, int64_t> offset_of(offsets.begin(), offsets.end());
  for (size_t i = 0; i < out->ranks.size(); ++i) {
    ShiftTimes(offset_of.at(clock_of[i]), &out->ranks[i]);
  }
  out->now_ns = instant;
  if (any_arrivals) out->offsets = std::move(offsets);
}

}  // namespace

void ApplyRankProgress(const RankProgress& p, int64_t now_ns, analysis::RankInput* in) {
  if (in->rank < 0) in->rank = p.rank();
  if (in->node.empty()) in->node = p.node();
  if (in->pid == 0) in->pid = p.pid();
  if (in->device < 0) in->device = p.device();
  if (p.exited()) {
    in->exit.exited = true;
    if (p.has_exit_cause()) in->exit.cause = proto::ExitKindOf(p.exit_cause());
    in->exit.code = p.exit_code();
    in->exit.at_ns = TimeOfAge(now_ns, p.exited_age_s());
  }
  if (!p.last_activity().empty()) {
    const int64_t at = TimeOfAge(now_ns, p.last_activity_age_s());
    if (at >= in->last_activity_ns) {
      in->last_activity = p.last_activity();
      in->last_activity_ns = at;
    }
  }
  if (p.recent_size() > 0) {
    in->arrivals.clear();
    for (const CollectiveArrival& a : p.recent()) {
      if (a.state() == CollectiveArrival::completed) {
        in->arrivals.push_back(proto::ArrivalOf(a, now_ns));
      }
    }
    // What its host did before them, where the daemon found it a host straggler.
    in->host_spans.clear();
    for (const HostSpan& h : p.host_spans()) in->host_spans.push_back(proto::HostSpanOf(h, now_ns));
  }
  in->progress.clear();
  for (const CommProgress& c : p.comms()) {
    const uint64_t id = CommIdOf(c.comm_id());
    if (FindComm(in, id) == nullptr) {
      analysis::Communicator comm;
      comm.id = id;
      comm.parent_id = CommIdOf(c.parent_id());
      comm.size = c.comm_size();
      comm.rank = c.comm_rank();
      comm.members.assign(c.members().begin(), c.members().end());
      in->comms.push_back(std::move(comm));
    }
    analysis::Progress pr;
    pr.comm_id = id;
    pr.last_issued_seq = c.last_issued_seq();
    pr.last_completed_seq = c.last_completed_seq();
    pr.oldest_issue_ns =
        c.oldest_inflight_age_s() > 0 ? TimeOfAge(now_ns, c.oldest_inflight_age_s()) : 0;
    pr.has_inflight = c.has_inflight();
    if (pr.has_inflight) pr.inflight = proto::ArrivalOf(c.inflight(), now_ns);
    pr.blocked_by = c.blocked_by();
    pr.blocked_by_communication = c.blocked_by_communication();
    pr.threshold_ns = static_cast<int64_t>(std::llround(std::max(0.0, c.hang_threshold_s()) * 1e9));
    pr.cadence_samples = c.cadence_samples();
    pr.blocked_by_comm_id = CommIdOf(c.blocked_by_comm_id());
    in->progress.push_back(std::move(pr));
  }
}

bool CombineHangChecks(const std::vector<HangCheckResponse>& answers, const std::string& job,
                       LiveInput* out, std::string* error) {
  std::set<std::string> jobs;
  std::vector<int> sizes;
  double now_s = 0;
  for (const HangCheckResponse& a : answers) {
    now_s = std::max(now_s, a.now());
    for (const RankProgress& p : a.ranks()) {
      jobs.insert(p.job());
      if (job.empty() || p.job() == job) sizes.push_back(p.world_size());
    }
  }
  std::string list;
  for (const std::string& j : jobs) list += (list.empty() ? "'" : ", '") + j + "'";
  if (job.empty() && jobs.size() > 1) {
    *error = "the nodes run " + std::to_string(jobs.size()) + " jobs (" + list +
             "): choose one with --job NAME";
    return false;
  }
  if (!job.empty() && !jobs.empty() && !jobs.count(job)) {
    *error = "--job '" + job + "' names none of the jobs the nodes run (" + list +
             "): pass --job with one of them";
    return false;
  }
  out->world = AgreedWorld(sizes);
  std::map<int32_t, analysis::RankInput> ranks;
  std::map<int32_t, std::string> seen_on;
  std::map<int32_t, std::string> clock_of_rank;
  const std::vector<std::string> clocks = ClockNames(answers);
  std::map<std::string, int64_t> now_of;  // each answer's `now` on its own clock
  for (size_t ai = 0; ai < answers.size(); ++ai) {
    const HangCheckResponse& a = answers[ai];
    const int64_t now_ns = static_cast<int64_t>(std::llround(a.now() * 1e9));
    now_of[clocks[ai]] = now_ns;
    for (const RankProgress& p : a.ranks()) {
      if (!job.empty() && p.job() != job) continue;
      if (p.rank() < 0) {
        out->warnings.push_back(a.node() + ": pid " + std::to_string(p.pid()) +
                                " has no rank: left out");
        continue;
      }
      auto it = seen_on.find(p.rank());
      if (it != seen_on.end()) {
        out->warnings.push_back("rank " + std::to_string(p.rank()) + " is reported by " +
                                it->second + " and " + a.node() + ": kept the first");
        continue;
      }
      if (out->world > 0 && ((p.world_size() > 0 && p.world_size() != out->world) ||
                             p.rank() >= out->world)) {
        out->warnings.push_back(a.node() + ": rank " + std::to_string(p.rank()) +
                                " has world size " + std::to_string(p.world_size()) +
                                ", the job " + std::to_string(out->world) + ": left out");
        continue;
      }
      seen_on[p.rank()] = a.node();
      clock_of_rank[p.rank()] = clocks[ai];
      analysis::RankInput& in = ranks[p.rank()];
      ApplyRankProgress(p, now_ns, &in);
      if (in.node.empty()) in.node = a.node();
      for (const CommProgress& c : p.comms()) {
        if (c.oldest_inflight_age_s() <= 0 || c.hang_threshold_s() <= 0) continue;
        if (out->threshold_s == 0 || c.hang_threshold_s() < out->threshold_s)
          out->threshold_s = c.hang_threshold_s();
      }
    }
  }
  std::vector<std::string> clock_of;
  for (auto& r : ranks) {
    clock_of.push_back(clock_of_rank[r.first]);
    out->ranks.push_back(std::move(r.second));
  }
  OnOneClock(clock_of, now_of, static_cast<int64_t>(std::llround(now_s * 1e9)), out);
  for (int32_t r = 0; r < out->world; ++r) {
    if (!ranks.count(r)) out->missing.push_back(r);
  }
  return true;
}

}  // namespace cli
}  // namespace xtimer

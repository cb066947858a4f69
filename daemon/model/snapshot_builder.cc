#include "daemon/model/snapshot_builder.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/base/log.h"
#include "daemon/model/blocked_by.h"
#include "daemon/model/comm_progress.h"
#include "daemon/model/process_state.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

std::vector<SeriesSnapshot> SeriesOf(const RankState& rank, int64_t now_ns,
                                     std::vector<int64_t>* scratch) {
  std::vector<uint64_t> keys;
  keys.reserve(rank.series.size());
  rank.series.ForEach([&keys](uint64_t key, const Series&) { keys.push_back(key); });
  std::sort(keys.begin(), keys.end());
  std::vector<SeriesSnapshot> out;
  out.reserve(keys.size());
  for (uint64_t k : keys) {
    const Series& s = *rank.series.Find(k);
    SeriesSnapshot ss;
    ss.kind = s.kind;
    ss.op = s.op;
    ss.dtype = s.dtype;
    ss.size_class = s.size_class;
    ss.count = s.count;
    ss.seconds = static_cast<double>(s.sum_ns) * 1e-9;
    ss.bytes = s.bytes;
    ss.flop = s.flop;
    ss.window = s.window.Compute(now_ns, scratch);
    out.push_back(ss);
  }
  return out;
}

CommSnapshot CommOf(const ProcessState& p, uint64_t cid, const CommState& c, int64_t at_ns) {
  CommSnapshot cs;
  cs.comm_id = cid;
  cs.last_completed_seq = c.completed_seq;
  if (c.has_row) {
    cs.last_completed_seq = std::max(cs.last_completed_seq, c.row.last_completed_seq);
    cs.last_issued_seq = c.row.last_issued_seq;
    cs.oldest_launch_ns = c.row.oldest_launch_ns;
    cs.device = c.row.device;
    cs.inflight = c.row.oldest;
    if (cs.inflight.state == format::InflightState::kQueued) {
      const format::InflightBlocker& b = cs.inflight.blocker;
      std::string name;
      if (b.name_id != 0) {
        if (const std::string* n = p.names.Find(b.name_id)) name = SanitizeLabelText(*n);
      }
      cs.blocked_by = DescribeBlocker(b, name, at_ns);
    }
  }
  cs.last_issued_seq = std::max(cs.last_issued_seq, cs.last_completed_seq);
  cs.last_completed_ns = c.last_completed_ns;
  cs.comm_rank = c.comm_rank;
  cs.comm_size = c.comm_size;
  cs.parent_id = c.parent_id;
  return cs;
}

// The snapshot entries of p's ranks (rank, series, communicators), from the process's `base`.
void AddRanks(const ProcessState& p, const ProcessSnapshot& base, int64_t now_ns,
              bool with_series, std::vector<int64_t>* scratch,
              std::vector<ProcessSnapshot>* out) {
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    const RankState& rank = *p.ranks[i];
    ProcessSnapshot ps = base;
    ps.first_rank = i == 0;
    ps.unaggregated = rank.unaggregated;
    if (p.ranks.size() > 1) {
      ps.device = rank.device;
      ps.local_rank = rank.device;
      uint64_t naming_id = 0;
      if (const CommState* c = NamingComm(rank.comms, &naming_id)) {
        ps.rank = c->comm_rank;
        ps.world_size = c->comm_size;
      }
    }
    if (with_series) ps.series = SeriesOf(rank, now_ns, scratch);
    std::vector<uint64_t> comm_ids;
    for (const auto& c : rank.comms) comm_ids.push_back(c.first);
    std::sort(comm_ids.begin(), comm_ids.end());
    for (uint64_t cid : comm_ids) {
      ps.comms.push_back(CommOf(p, cid, rank.comms.at(cid), base.observed_ns));
    }
    out->push_back(std::move(ps));
  }
}

// What the process as a whole shows (identity, exit, ring counters), before its ranks.
ProcessSnapshot ProcessOf(uint64_t id, const ProcessState& p, const AggregatorOptions& o,
                          int64_t now_ns) {
  ProcessSnapshot ps;
  ps.id = id;
  ps.pid = p.pid;
  ps.uid = p.uid;
  ps.job = p.identity.job;
  ps.host = p.identity.host;
  ps.pod = p.identity.pod;
  ps.rank = p.identity.rank;
  ps.local_rank = p.identity.local_rank;
  ps.world_size = p.identity.world_size;
  ps.op_log = p.identity.op_log;
  ps.exited = !p.connected;
  ps.exit_cause = p.exit_cause;
  ps.exited_ns = p.exited_ns;
  ps.crash_frame = p.crash_frame;
  ps.written = p.status.written;
  ps.dropped = p.status.dropped;
  std::copy(std::begin(p.status.untimed), std::end(p.status.untimed), std::begin(ps.untimed));
  ps.hook_own_ns = p.status.hook_own_ns;
  ps.timing = p.status.timing;
  ps.invalid = p.status.invalid;
  ps.lost = p.status.lost;
  ps.fill = p.status.fill;
  ps.heartbeat_ns = p.status.heartbeat_ns;
  // An exited process is frozen at its exit; in-flight ages run up to the last time its table
  // was seen (a reader or poller that stalls makes no hang).
  ps.observed_ns = p.connected ? now_ns : std::min(now_ns, p.exited_ns);
  if (p.status.observed_ns > 0) ps.observed_ns = std::min(ps.observed_ns, p.status.observed_ns);
  ps.up = p.connected && (o.stale_heartbeat_ns <= 0 ||
                          AgeSeconds(now_ns, p.status.heartbeat_ns) * 1e9 <
                              static_cast<double>(o.stale_heartbeat_ns));
  ps.history = p.history.size();
  ps.steps = p.steps;
  ps.python_steps = p.python_steps;
  return ps;
}

// Label conflicts: live processes claim their labels first (in registration order), so a rank
// restarted after a crash is exported and its exited predecessor is hidden. Counts live conflicts
// in snap->identity_conflicts.
void MarkHidden(const ProcessRegistry& registry, Snapshot* snap) {
  std::set<std::string> seen;
  for (int pass = 0; pass < 2; ++pass) {
    for (ProcessSnapshot& ps : snap->processes) {
      if (ps.exited == (pass == 0)) continue;
      const std::string key = ps.job + '\0' + ps.host + '\0' + ps.pod + '\0' +
                              std::to_string(ps.rank) + '\0' + std::to_string(ps.local_rank);
      if (seen.insert(key).second) continue;
      ps.hidden = true;
      if (ps.exited) continue;
      ++snap->identity_conflicts;
      const ProcessState* p = registry.Find(ps.id);
      if (p != nullptr && !p->conflict_logged) {
        p->conflict_logged = true;
        Logf("pid %d has the same job/host/pod/rank/local_rank as another live process "
             "(rank %d); its series are not exported",
             ps.pid, ps.rank);
      }
    }
  }
}

}  // namespace

Snapshot BuildSnapshot(const ProcessRegistry& registry, const AggregatorOptions& options,
                       int64_t start_ns, int64_t now_ns, bool with_series) {
  Snapshot snap;
  snap.registrations = registry.registrations();
  snap.registrations_refused = registry.refusals().counts();
  for (const auto& c : snap.registrations_refused) snap.registrations_rejected += c.second;
  snap.memory_bytes = registry.budget().total();
  snap.memory_budget_bytes = registry.budget().budget();
  snap.history_shrinks = registry.budget().history_shrinks();
  snap.start_ns = start_ns;
  snap.now_ns = now_ns;
  std::vector<int64_t> scratch;
  snap.processes.reserve(registry.processes().size());
  for (const auto& entry : registry.processes()) {
    const ProcessState& p = *entry.second;
    if (p.connected) {
      ++snap.connected;
    } else {
      ++snap.exited;
    }
    AddRanks(p, ProcessOf(entry.first, p, options, now_ns), now_ns, with_series, &scratch,
             &snap.processes);
  }
  MarkHidden(registry, &snap);
  return snap;
}

}  // namespace daemon
}  // namespace xtimer

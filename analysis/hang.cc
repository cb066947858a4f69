// Hang verdicts: which communicators stall, in which instance, and whose fault it is.
#include <algorithm>
#include <map>
#include <csignal>
#include <cstdio>
#include <tuple>

#include "analysis/passes.h"
#include "format/record.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr double kNsPerS = 1e9;

// What a member did at the stalled instance; the fields Flight Recorder compares.
struct Signature {
  uint16_t op = 0;
  uint8_t dtype = 0;
  uint64_t count = 0;
  int32_t root = -1;
  bool operator==(const Signature& o) const {
    return op == o.op && dtype == o.dtype && count == o.count && root == o.root;
  }
};

Signature SignatureOf(const Arrival& a) { return {a.op, a.dtype, a.count, a.root}; }

const char* FirstDifference(const Signature& a, const Signature& b) {
  if (a.op != b.op) return "op";
  if (a.dtype != b.dtype) return "dtype";
  if (a.count != b.count) return "count";
  if (a.root != b.root) return "root";
  return "";
}

std::string SignatureText(const Signature& s) {
  std::string t = OpText(s.op) + " (count " + std::to_string(s.count) + ", " +
                  format::DTypeName(static_cast<format::DType>(s.dtype));
  if (s.root >= 0) t += ", root " + std::to_string(s.root);
  return t + ")";
}

using SigGroups = std::vector<std::pair<Signature, std::vector<int32_t>>>;

void AddToGroups(const Signature& sig, int32_t rank, SigGroups* groups) {
  for (auto& g : *groups) {
    if (g.first == sig) {
      g.second.push_back(rank);
      return;
    }
  }
  groups->push_back({sig, {rank}});
}

std::string RanksText(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankList(ranks);
}

// The largest group (ties: the one holding the lowest global rank) is right; every other
// member is a culprit. Fills op, mismatch, culprits and evidence; `verb` is "issued" or
// "completed". Returns the majority's index.
size_t FillMismatch(const SigGroups& groups, const char* verb, const std::string& where,
                    HangVerdict* v) {
  size_t major = 0;
  for (size_t g = 1; g < groups.size(); ++g) {
    const auto& a = groups[g].second;
    const auto& b = groups[major].second;
    if (a.size() > b.size() || (a.size() == b.size() && a.front() < b.front())) major = g;
  }
  const Signature& right = groups[major].first;
  v->kind = HangKind::kMismatch;
  v->op = right.op;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g == major) continue;
    for (int32_t r : groups[g].second) v->culprit_ranks.push_back(r);
    const char* field = FirstDifference(groups[g].first, right);
    if (v->mismatch.empty()) v->mismatch = field;
    v->evidence.push_back(RanksText(groups[g].second) + " " + verb + " " +
                          SignatureText(groups[g].first) + " at " + where + " where " +
                          RanksText(groups[major].second) + " " + verb + " " +
                          SignatureText(right) + " (" + field + " differs)");
  }
  std::sort(v->culprit_ranks.begin(), v->culprit_ranks.end());
  return major;
}

const char* SignalName(int sig) {
  static const struct {
    int sig;
    const char* name;
  } kSignals[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
                  {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
                  {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
                  {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
                  {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
                  {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& s : kSignals) {
    if (s.sig == sig) return s.name;
  }
  return nullptr;
}

std::string AgoText(int64_t at_ns, int64_t now_ns) {
  if (at_ns <= 0 || now_ns < at_ns) return "";
  return " " + DurationText((now_ns - at_ns) / kNsPerS) + " ago";
}

std::string ExitEvidence(const RankInput& in, int64_t now_ns) {
  std::string how;
  if (in.exit.cause == "signal") {
    how = "signal " + std::to_string(in.exit.code);
    if (const char* name = SignalName(in.exit.code)) how += std::string(" (") + name + ")";
  } else if (in.exit.cause == "exit") {
    how = "exit status " + std::to_string(in.exit.code);
  } else if (in.exit.cause == "connection_lost") {
    how = "connection to the daemon lost";
  } else {
    how = in.exit.cause.empty() ? "cause unknown" : in.exit.cause;
  }
  return "rank " + std::to_string(in.rank) + " exited: " + how + AgoText(in.exit.at_ns, now_ns);
}

// One member of the stalled communicator, as the verdict sees it.
struct Member {
  const RankInput* input = nullptr;
  const Progress* progress = nullptr;  // nullptr: state unknown (no in-flight table)
  uint64_t last_completed = 0;
  bool has_completed = false;
  bool waits = false;
  const Arrival* at_stall = nullptr;  // its completed arrival at S, if any
  const Arrival* inflight_at_stall() const {
    if (progress && progress->has_inflight) return &progress->inflight;
    return nullptr;
  }
};

class CommHang {
 public:
  CommHang(const std::vector<RankInput>& ranks, const CommView& comm, const Options& options)
      : ranks_(ranks), comm_(comm), options_(options) {}

  // Appends a verdict when some member waits past the threshold.
  void Check(std::vector<HangVerdict>* out) {
    threshold_ns_ = Threshold();
    LoadMembers();
    int64_t stall_seq_found = 0;
    for (const Member& m : members_) {
      if (!m.waits) continue;
      uint64_t s = InflightSeq(m);
      if (stall_seq_found == 0 || s < stall_) stall_ = s;
      stall_seq_found = 1;
    }
    if (!stall_seq_found) return;
    for (Member& m : members_) m.at_stall = CompletedAt(m, stall_);
    HangVerdict v;
    v.comm_id = comm_.id;
    v.seq = stall_;
    v.threshold_s = threshold_ns_ / kNsPerS;
    v.stalled_s = StalledNs() / kNsPerS;
    v.op = WaitersOp();
    v.downstream = QueuedBehindCommunication();
    if (!(Exited(&v) || Mismatch(&v) || NeverIssued(&v) || NotStarted(&v))) Stuck(&v);
    for (const Member& m : members_) {
      bool culprit = std::find(v.culprit_ranks.begin(), v.culprit_ranks.end(), m.input->rank) !=
                     v.culprit_ranks.end();
      if (m.waits && !culprit) v.waiting_ranks.push_back(m.input->rank);
    }
    out->push_back(std::move(v));
  }

 private:
  int64_t Threshold() const {
    std::vector<int64_t> ends;
    size_t want = static_cast<size_t>(std::max(options_.cadence_window, 1)) + 1;
    const auto& e = comm_.entries;
    size_t i = e.size();
    while (i > 0 && ends.size() < want) {
      uint64_t seq = e[i - 1].seq;
      int64_t end = 0;
      while (i > 0 && e[i - 1].seq == seq) end = std::max(end, e[--i].end_ns);
      if (end > 0) ends.push_back(end);
    }
    return HangThresholdNs(std::move(ends), options_);
  }

  void LoadMembers() {
    members_.resize(comm_.inputs.size());
    for (size_t s = 0; s < comm_.inputs.size(); ++s) {
      Member& m = members_[s];
      m.input = &ranks_[comm_.inputs[s]];
      m.progress = FindProgress(*m.input, comm_.id);
    }
    for (const CommEntry& e : comm_.entries) {
      Member& m = members_[e.slot];
      m.last_completed = std::max(m.last_completed, e.seq);
      m.has_completed = true;
    }
    for (Member& m : members_) {
      if (m.progress) m.last_completed = std::max(m.last_completed, m.progress->last_completed_seq);
      m.waits = !m.input->exit.exited && m.progress && m.progress->oldest_issue_ns > 0 &&
                options_.now_ns - m.progress->oldest_issue_ns > threshold_ns_;
    }
  }

  uint64_t InflightSeq(const Member& m) const {
    if (m.progress->has_inflight) return m.progress->inflight.seq;
    return m.last_completed + 1;
  }

  uint64_t LastIssued(const Member& m) const {
    return std::max(m.progress->last_issued_seq, m.last_completed);
  }

  const Arrival* CompletedAt(const Member& m, uint64_t seq) const {
    auto it = std::lower_bound(
        comm_.entries.begin(), comm_.entries.end(), seq,
        [](const CommEntry& e, uint64_t s) { return e.seq < s; });
    for (; it != comm_.entries.end() && it->seq == seq; ++it) {
      if (m.input == &ranks_[comm_.inputs[it->slot]]) return it->arrival;
    }
    return nullptr;
  }

  // The signature a member has at the stalled instance, if known.
  bool SignatureAtStall(const Member& m, Signature* sig) const {
    const Arrival* a = m.inflight_at_stall();
    if (a && a->seq == stall_) {
      *sig = SignatureOf(*a);
      return true;
    }
    if (m.at_stall) {
      *sig = SignatureOf(*m.at_stall);
      return true;
    }
    return false;
  }

  int64_t StalledNs() const {
    int64_t last = 0;
    for (const CommEntry& e : comm_.entries) last = std::max(last, e.end_ns);
    int64_t first_issue = 0;
    for (const Member& m : members_) {
      if (m.waits && (first_issue == 0 || m.progress->oldest_issue_ns < first_issue)) {
        first_issue = m.progress->oldest_issue_ns;
      }
    }
    return std::max<int64_t>(0, options_.now_ns - std::max(last, first_issue));
  }

  uint16_t WaitersOp() const {
    for (const Member& m : members_) {
      const Arrival* a = m.inflight_at_stall();
      if (m.waits && a && a->seq == stall_) return a->op;
    }
    return 0;
  }

  std::string Where() const {
    return "seq " + std::to_string(stall_) + " on communicator " + CommText(comm_.id);
  }

  bool Exited(HangVerdict* v) const {
    for (const Member& m : members_) {
      if (!m.input->exit.exited) continue;
      v->culprit_ranks.push_back(m.input->rank);
      v->evidence.push_back(ExitEvidence(*m.input, options_.now_ns));
    }
    if (v->culprit_ranks.empty()) return false;
    v->kind = HangKind::kExited;
    return true;
  }

  bool Mismatch(HangVerdict* v) const {
    SigGroups groups;
    for (const Member& m : members_) {
      Signature sig;
      if (SignatureAtStall(m, &sig)) AddToGroups(sig, m.input->rank, &groups);
    }
    if (groups.size() < 2) return false;
    FillMismatch(groups, "issued", Where(), v);
    return true;
  }

  bool NeverIssued(HangVerdict* v) const {
    for (const Member& m : members_) {
      if (!m.progress || LastIssued(m) >= stall_) continue;
      v->culprit_ranks.push_back(m.input->rank);
      std::string e = "rank " + std::to_string(m.input->rank) + " never issued " + Where() +
                      " (its last issued is seq " + std::to_string(LastIssued(m)) + ")";
      if (!m.input->last_activity.empty()) e += "; last seen: " + m.input->last_activity;
      if (m.input->last_activity_ns > 0) {
        e += "; last activity" + AgoText(m.input->last_activity_ns, options_.now_ns);
      }
      v->evidence.push_back(e);
    }
    if (v->culprit_ranks.empty()) return false;
    v->kind = HangKind::kNeverIssued;
    return true;
  }

  bool NotStarted(HangVerdict* v) const {
    for (const Member& m : members_) {
      const Arrival* a = m.inflight_at_stall();
      if (!a || a->seq != stall_ || a->state != OpState::kQueued) continue;
      if (m.progress->blocked_by_communication) {
        v->evidence.push_back("rank " + std::to_string(m.input->rank) + "'s " + OpText(a->op) +
                              " " + Where() + " is queued behind " +
                              (m.progress->blocked_by.empty() ? std::string("a communication op")
                                                              : m.progress->blocked_by) +
                              ": it waits on other ranks and is not blamed");
        continue;
      }
      v->culprit_ranks.push_back(m.input->rank);
      std::string e = "rank " + std::to_string(m.input->rank) + "'s " + OpText(a->op) + " " +
                      Where() + " was issued but its GPU never started it: ";
      e += m.progress->blocked_by.empty()
               ? "earlier work on its stream has not finished"
               : "its stream is still busy with " + m.progress->blocked_by;
      v->evidence.push_back(e);
    }
    if (v->culprit_ranks.empty()) return false;
    v->kind = HangKind::kNotStarted;
    return true;
  }

  bool QueuedBehindCommunication() const {
    for (const Member& m : members_) {
      const Arrival* a = m.inflight_at_stall();
      if (a && a->seq == stall_ && a->state == OpState::kQueued &&
          m.progress->blocked_by_communication) {
        return true;
      }
    }
    return false;
  }

  void Stuck(HangVerdict* v) const {
    std::vector<int32_t> absent;
    size_t known = 0;
    for (const Member& m : members_) known += m.progress != nullptr;
    if (known < static_cast<size_t>(comm_.size)) {
      v->kind = HangKind::kWaitingOnRemote;
      v->evidence.push_back(
          std::to_string(comm_.size - known) + " of the communicator's " +
          std::to_string(comm_.size) +
          " members are not among the inputs, and the ranks given all issued " + Where() +
          ": the culprit is among the others (combine the nodes' answers)");
      return;
    }
    v->kind = HangKind::kStuckInCollective;
    if (v->downstream) {
      v->evidence.push_back("every member issued " + OpText(v->op) + " " + Where() +
                            " and none completed it for " + DurationText(v->stalled_s) +
                            ": it waits behind a stalled communication op (above), no rank is "
                            "blamed");
      return;
    }
    v->evidence.push_back("every member issued " + OpText(v->op) + " " + Where() +
                          " and none completed it for " +
                          DurationText(v->stalled_s) + ": a communication fault, no rank is blamed");
  }

  const std::vector<RankInput>& ranks_;
  const CommView& comm_;
  const Options& options_;
  int64_t threshold_ns_ = 0;
  uint64_t stall_ = 0;
  std::vector<Member> members_;
};

// Completed instances whose members' signatures differ: a mismatch even without a stall.
void CompletedMismatch(const std::vector<RankInput>& ranks, const CommView& comm,
                       std::vector<HangVerdict>* out) {
  const auto& e = comm.entries;
  size_t first_bad = e.size();
  uint64_t bad_instances = 0, instances = 0;
  for (size_t i = 0; i < e.size();) {
    size_t j = i + 1;
    bool bad = false;
    for (; j < e.size() && e[j].seq == e[i].seq; ++j) {
      if (e[j].signature != e[i].signature) bad = true;
    }
    ++instances;
    if (bad) {
      ++bad_instances;
      if (first_bad == e.size()) first_bad = i;
    }
    i = j;
  }
  if (!bad_instances) return;
  SigGroups groups;
  for (size_t j = first_bad; j < e.size() && e[j].seq == e[first_bad].seq; ++j) {
    AddToGroups(SignatureOf(*e[j].arrival), ranks[comm.inputs[e[j].slot]].rank, &groups);
  }
  HangVerdict v;
  v.comm_id = comm.id;
  v.seq = e[first_bad].seq;
  size_t major = FillMismatch(
      groups, "completed", "seq " + std::to_string(v.seq) + " on communicator " + CommText(comm.id),
      &v);
  v.waiting_ranks = groups[major].second;
  v.evidence.push_back(std::to_string(bad_instances) + " of " + std::to_string(instances) +
                       " completed instances on the communicator differ between members");
  out->push_back(std::move(v));
}

int Severity(HangKind k) {
  switch (k) {
    case HangKind::kExited: return 0;
    case HangKind::kMismatch: return 1;
    case HangKind::kNeverIssued: return 2;
    case HangKind::kNotStarted: return 3;
    case HangKind::kStuckInCollective: return 4;
    case HangKind::kWaitingOnRemote: return 5;
  }
  return 6;
}

}  // namespace

int64_t HangThresholdNs(std::vector<int64_t> completion_ns, const Options& options) {
  int64_t hi = options.hang_timeout_ns;
  int64_t lo = std::min(options.min_hang_ns, hi);
  size_t need = static_cast<size_t>(std::max(options.min_cadence_samples, 2));
  if (completion_ns.size() < need) return hi;
  std::sort(completion_ns.begin(), completion_ns.end());
  size_t keep = static_cast<size_t>(std::max(options.cadence_window, 1)) + 1;
  if (completion_ns.size() > keep) {
    completion_ns.erase(completion_ns.begin(), completion_ns.end() - keep);
  }
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < completion_ns.size(); ++i) {
    gaps.push_back(completion_ns[i] - completion_ns[i - 1]);
  }
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  double t = options.cadence_factor * static_cast<double>(gaps[gaps.size() / 2]);
  if (!(t > lo)) return lo;  // also NaN
  if (t > static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(t);
}

int64_t HangThresholdNs(const std::vector<Arrival>& arrivals, uint64_t comm_id,
                        const Options& options) {
  std::vector<int64_t> ends;
  for (const Arrival& a : arrivals) {
    if (a.comm_id == comm_id && a.state == OpState::kCompleted && a.end_ns > 0) {
      ends.push_back(a.end_ns);
    }
  }
  return HangThresholdNs(std::move(ends), options);
}

const char* HangKindName(HangKind kind) {
  switch (kind) {
    case HangKind::kNeverIssued: return "never_issued";
    case HangKind::kMismatch: return "mismatch";
    case HangKind::kStuckInCollective: return "stuck_in_collective";
    case HangKind::kExited: return "exited";
    case HangKind::kNotStarted: return "not_started";
    case HangKind::kWaitingOnRemote: return "waiting_on_remote";
  }
  return "unknown";
}

// A rank that waits in one communicator's stalled collective cannot issue (never_issued) or start
// (not_started) the next collective of another: it is a victim there, not a culprit. Such
// culprits are dropped, with a sentence; a verdict left with no culprit is dropped when another
// verdict remains (the one that explains it).
void DropBlockedCulprits(std::vector<HangVerdict>* verdicts) {
  std::map<int32_t, uint64_t> waits_in;  // rank -> a communicator it waits in
  for (const HangVerdict& v : *verdicts) {
    for (int32_t r : v.waiting_ranks) waits_in.emplace(r, v.comm_id);
  }
  std::vector<HangVerdict> kept;
  for (HangVerdict& v : *verdicts) {
    if (v.kind != HangKind::kNeverIssued && v.kind != HangKind::kNotStarted) {
      kept.push_back(std::move(v));
      continue;
    }
    std::vector<int32_t> culprits;
    for (int32_t r : v.culprit_ranks) {
      auto w = waits_in.find(r);
      if (w == waits_in.end() || w->second == v.comm_id) {
        culprits.push_back(r);
        continue;
      }
      v.evidence.push_back("rank " + std::to_string(r) +
                           " is not blamed here: it waits in a stalled collective on communicator " +
                           CommText(w->second));
    }
    if (culprits.empty() && verdicts->size() > 1) continue;
    v.culprit_ranks = std::move(culprits);
    kept.push_back(std::move(v));
  }
  *verdicts = std::move(kept);
}

// Verdicts that follow from another stall and blame no rank are dropped when a verdict that does
// not follow from another remains: that one names the cause.
void DropDownstream(std::vector<HangVerdict>* verdicts) {
  const bool has_root = std::any_of(verdicts->begin(), verdicts->end(),
                                    [](const HangVerdict& v) { return !v.downstream; });
  if (!has_root) return;
  verdicts->erase(std::remove_if(verdicts->begin(), verdicts->end(),
                                 [](const HangVerdict& v) {
                                   return v.downstream && v.culprit_ranks.empty();
                                 }),
                  verdicts->end());
}

std::vector<HangVerdict> FindHangs(const std::vector<RankInput>& ranks,
                                   const std::vector<CommView>& comms, const Options& options) {
  std::vector<HangVerdict> out;
  for (const CommView& comm : comms) {
    CommHang(ranks, comm, options).Check(&out);
    CompletedMismatch(ranks, comm, &out);
  }
  DropBlockedCulprits(&out);
  DropDownstream(&out);
  std::stable_sort(out.begin(), out.end(), [](const HangVerdict& a, const HangVerdict& b) {
    return std::make_tuple(Severity(a.kind), -a.stalled_s, a.comm_id) <
           std::make_tuple(Severity(b.kind), -b.stalled_s, b.comm_id);
  });
  return out;
}

}  // namespace analysis
}  // namespace xtimer

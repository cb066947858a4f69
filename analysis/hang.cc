// Hang verdicts: which communicators stall, in which instance, and whose fault it is.
#include <algorithm>
#include <map>
#include <csignal>
#include <cstdio>
#include <tuple>

#include "analysis/mismatch.h"
#include "analysis/passes.h"
#include "format/record.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr double kNsPerS = 1e9;


std::string AgoText(int64_t at_ns, int64_t now_ns) {
  if (at_ns <= 0 || now_ns < at_ns) return "";
  return " " + DurationText((now_ns - at_ns) / kNsPerS) + " ago";
}

std::string ExitHow(const Exit& e) {
  if (!e.cause.has_value()) return "cause unknown";
  switch (*e.cause) {
    case format::ExitKind::kSignal: {
      std::string how = "signal " + std::to_string(e.code);
      if (const char* name = SignalName(e.code)) how += std::string(" (") + name + ")";
      return how;
    }
    case format::ExitKind::kExited: return "exit status " + std::to_string(e.code);
    case format::ExitKind::kNone: break;
  }
  return "connection to the daemon lost";
}

std::string ExitEvidence(const RankInput& in, int64_t now_ns) {
  std::string how = ExitHow(in.exit);
  if (!in.exit.crash_frame.empty()) how += " in " + in.exit.crash_frame;
  return "rank " + std::to_string(in.rank) + " exited: " + how + AgoText(in.exit.at_ns, now_ns);
}

// Fatal signals a program raises itself (a fault): such an exit heads the verdict over exits a
// moment earlier or later (a launcher tearing the other ranks down with SIGTERM or SIGKILL).
bool FaultSignal(const Exit& e) {
  if (e.cause != format::ExitKind::kSignal) return false;
  return e.code == SIGSEGV || e.code == SIGBUS || e.code == SIGFPE || e.code == SIGILL ||
         e.code == SIGABRT;
}

// An exit that breaks the job: a signal, a non-zero status, or a connection lost without a
// marker (SIGKILL, SIGTERM without a handler, _exit). A rank that returned status 0 is a culprit
// only when others wait for it.
bool AbnormalExit(const Exit& e) {
  return e.exited && !(e.cause == format::ExitKind::kExited && e.code == 0);
}

// Exits within this of the earliest are one failure: a fault signal among them heads it.
constexpr int64_t kSameFailureNs = 1000000000;

// One member of the stalled communicator, as the verdict sees it.
struct Member {
  const RankInput* input = nullptr;
  const Progress* progress = nullptr;  // nullptr: state unknown (no in-flight table)
  uint32_t slot = 0;                   // its place in CommView::inputs
  uint64_t last_completed = 0;
  bool has_completed = false;
  bool waits = false;
  const Arrival* at_stall = nullptr;  // its completed arrival at S, if any
  const Arrival* inflight_at_stall() const {
    if (progress && progress->has_inflight) return &progress->inflight;
    return nullptr;
  }
};

// The members that exited, first failure first: the earliest exit, unless a fault signal came
// within kSameFailureNs of it; then by time, then by rank.
std::vector<const Member*> ExitOrder(const std::vector<Member>& members) {
  std::vector<const Member*> out;
  for (const Member& m : members) {
    if (m.input->exit.exited) out.push_back(&m);
  }
  auto by_time = [](const Member* a, const Member* b) {
    return std::make_pair(a->input->exit.at_ns, a->input->rank) <
           std::make_pair(b->input->exit.at_ns, b->input->rank);
  };
  std::sort(out.begin(), out.end(), by_time);
  if (out.size() < 2) return out;
  const int64_t first = out.front()->input->exit.at_ns;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i]->input->exit.at_ns - first > kSameFailureNs) break;
    if (FaultSignal(out[i]->input->exit)) {
      std::rotate(out.begin(), out.begin() + i, out.begin() + i + 1);
      break;
    }
  }
  return out;
}

class CommHang {
 public:
  CommHang(const std::vector<RankInput>& ranks, const CommView& comm, const Options& options)
      : ranks_(ranks), comm_(comm), options_(options) {
    LoadMembers();
    base_threshold_ns_ = Threshold();
  }

  // The threshold in force: the base one, or early_hang_ns when Check judged the stall early.
  int64_t threshold_ns() const { return early_ ? options_.early_hang_ns : base_threshold_ns_; }
  int history() const { return history_; }

  // Appends a verdict when a member exited abnormally, or some member waits past the threshold.
  void Check(std::vector<HangVerdict>* out) {
    HangVerdict v;
    if (Judge(base_threshold_ns_, &v) || (EarlyAllowed() && JudgeEarly(&v))) {
      out->push_back(std::move(v));
    }
  }

 private:
  // With no history, the first instance may connect for long: only a stall that carries its own
  // evidence is judged at early_hang_ns.
  bool EarlyAllowed() const {
    return history_ == 0 && options_.early_hang_ns < base_threshold_ns_;
  }

  bool JudgeEarly(HangVerdict* v) {
    HangVerdict early;
    if (!Judge(options_.early_hang_ns, &early) || !Conclusive(early)) return false;
    *v = std::move(early);
    early_ = true;
    v->evidence.push_back("judged " + DurationText(options_.early_hang_ns / kNsPerS) +
                          " after the last progress: the communicator has no completed instance "
                          "yet, and this evidence needs none");
    return true;
  }

  // Evidence that needs no cadence history: an exit, calls that differ (also when the members
  // given hold no majority and leave the culprit to the others: waiting_on_remote), or culprits
  // that never issued the op and have done nothing at all since early_hang_ns.
  bool Conclusive(const HangVerdict& v) const {
    if (v.kind == HangKind::kExited || v.kind == HangKind::kMismatch) return true;
    if (v.kind == HangKind::kWaitingOnRemote && disagree_) return true;
    if (v.kind != HangKind::kNeverIssued) return false;
    for (int32_t r : v.culprit_ranks) {
      const Member* m = MemberOf(r);
      if (m == nullptr || m->input->last_activity_ns <= 0 ||
          options_.now_ns - m->input->last_activity_ns < options_.early_hang_ns) {
        return false;
      }
    }
    return !v.culprit_ranks.empty();
  }

  const Member* MemberOf(int32_t rank) const {
    for (const Member& m : members_) {
      if (m.input->rank == rank) return &m;
    }
    return nullptr;
  }

  bool Judge(int64_t threshold_ns, HangVerdict* v) {
    threshold_ns_ = threshold_ns;
    MarkWaiters();
    const bool abnormal = std::any_of(members_.begin(), members_.end(), [](const Member& m) {
      return AbnormalExit(m.input->exit);
    });
    if (!FindStall() && !abnormal) return false;
    v->comm_id = comm_.id;
    v->seq = stall_;
    v->point_to_point = p2p_;
    v->threshold_s = threshold_ns_ / kNsPerS;
    v->stalled_s = StalledNs() / kNsPerS;
    v->op = WaitersOp();
    v->downstream = QueuedBehindCommunication(&v->upstream_comm_id);
    if (!(Exited(v) || (p2p_ ? PeerIdle(v) : (Mismatch(v) || NeverIssued(v) || NotStarted(v))))) {
      Stuck(v);
    }
    for (const Member& m : members_) {
      bool culprit = std::find(v->culprit_ranks.begin(), v->culprit_ranks.end(),
                               m.input->rank) != v->culprit_ranks.end();
      if (m.waits && !culprit) v->waiting_ranks.push_back(m.input->rank);
    }
    // No verdict without a victim, but for an exit (itself the evidence).
    return v->kind == HangKind::kExited || !v->waiting_ranks.empty();
  }

  // Sets stall_ (S) and p2p_ from the waiting members; false when none waits.
  bool FindStall() {
    bool found = false, any_collective = false;
    for (const Member& m : members_) any_collective |= m.waits && m.progress->has_inflight;
    p2p_ = false;
    stall_ = 0;
    for (const Member& m : members_) {
      if (!m.waits) continue;
      found = true;
      if (any_collective && !m.progress->has_inflight) continue;
      uint64_t s = InflightSeq(m);
      if (stall_ == 0 || s < stall_) stall_ = s;
    }
    if (found && !any_collective) {
      p2p_ = true;
      stall_ = 0;
    }
    for (Member& m : members_) m.at_stall = p2p_ || !found ? nullptr : CompletedAt(m, stall_);
    return found;
  }

  // The largest threshold a daemon carried for the communicator, else one from the completions
  // of its collectives, else of its sends and receives.
  int64_t Threshold() {
    int64_t carried = 0;
    for (const Member& m : members_) {
      if (m.progress && m.progress->threshold_ns > carried) {
        carried = m.progress->threshold_ns;
        history_ = std::max(history_, m.progress->cadence_samples);
      }
    }
    if (carried > 0) return carried;
    std::vector<int64_t> ends = comm_.facts.instance_ends;
    if (ends.empty()) ends = P2PEnds();
    history_ = static_cast<int>(ends.size());
    return HangThresholdNs(std::move(ends), options_);
  }

  std::vector<int64_t> P2PEnds() const {
    std::vector<int64_t> ends;
    for (const Member& m : members_) {
      for (const P2PCompletion& c : m.input->p2p_completions) {
        if (c.comm_id == comm_.id && c.end_ns > 0) ends.push_back(c.end_ns);
      }
    }
    return ends;
  }

  void LoadMembers() {
    members_.resize(comm_.inputs.size());
    for (size_t s = 0; s < comm_.inputs.size(); ++s) {
      Member& m = members_[s];
      m.input = &ranks_[comm_.inputs[s]];
      m.progress = FindProgress(*m.input, comm_.id);
      m.slot = static_cast<uint32_t>(s);
      m.last_completed = comm_.facts.last_completed[s];
      m.has_completed = comm_.facts.has_completed[s] != 0;
    }
    for (Member& m : members_) {
      if (m.progress) m.last_completed = std::max(m.last_completed, m.progress->last_completed_seq);
    }
  }

  void MarkWaiters() {
    for (Member& m : members_) {
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

  // The member's completed arrival at `seq`, kept by the fold for the stalls it can be asked for
  // (SeqsToKeep).
  const Arrival* CompletedAt(const Member& m, uint64_t seq) const {
    auto kept = comm_.facts.kept.find(seq);
    if (kept == comm_.facts.kept.end()) return nullptr;
    for (const KeptArrival& k : kept->second) {
      if (k.slot == m.slot) return &k.arrival;
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
    const int64_t last = comm_.facts.last_end;
    int64_t first_issue = 0;
    for (const Member& m : members_) {
      if (m.waits && (first_issue == 0 || m.progress->oldest_issue_ns < first_issue)) {
        first_issue = m.progress->oldest_issue_ns;
      }
      if (AbnormalExit(m.input->exit) && (first_issue == 0 || m.input->exit.at_ns < first_issue)) {
        first_issue = m.input->exit.at_ns;
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
    HangVerdict v;
    v.comm_id = comm_.id;
    v.seq = stall_;
    v.point_to_point = p2p_;
    return VerdictWhere(v);
  }

  // The first failure among the members that exited abnormally is the culprit; the others
  // exited after it. A member that exited with status 0 is a culprit only when others wait.
  bool Exited(HangVerdict* v) const {
    std::vector<const Member*> order = ExitOrder(members_);
    const bool waiters = std::any_of(members_.begin(), members_.end(),
                                     [](const Member& m) { return m.waits; });
    std::stable_partition(order.begin(), order.end(),
                          [](const Member* m) { return AbnormalExit(m->input->exit); });
    if (order.empty() || (!AbnormalExit(order.front()->input->exit) && !waiters)) return false;
    v->kind = HangKind::kExited;
    v->culprit_ranks.push_back(order.front()->input->rank);
    v->first_exit_ns = order.front()->input->exit.at_ns;
    v->evidence.push_back(ExitEvidence(*order.front()->input, options_.now_ns));
    for (size_t i = 1; i < order.size(); ++i) {
      v->evidence.push_back(ExitEvidence(*order[i]->input, options_.now_ns) +
                            " (after the first failure: not blamed)");
    }
    return true;
  }

  bool Mismatch(HangVerdict* v) {
    SigGroups groups;
    for (const Member& m : members_) {
      Signature sig;
      if (SignatureAtStall(m, &sig)) AddToGroups(sig, m.input->rank, &groups);
    }
    if (groups.size() < 2) return false;
    disagree_ = true;
    if (!MajorityCertain(groups, Known(), comm_.size)) {
      v->evidence.push_back("the members given disagree at " + Where() +
                            ", but no side holds a majority of the communicator's " +
                            std::to_string(comm_.size) + " members: the others decide");
      return false;  // Stuck: waiting_on_remote
    }
    FillMismatch(groups, "issued", Where(), v);
    return true;
  }

  std::string LastSeen(const Member& m) const {
    std::string e;
    if (!m.input->last_activity.empty()) e += "; last seen: " + m.input->last_activity;
    if (m.input->last_activity_ns > 0) {
      e += "; last activity" + AgoText(m.input->last_activity_ns, options_.now_ns);
    }
    return e;
  }

  bool NeverIssued(HangVerdict* v) const {
    for (const Member& m : members_) {
      if (!m.progress || m.waits || LastIssued(m) >= stall_) continue;
      v->culprit_ranks.push_back(m.input->rank);
      v->evidence.push_back("rank " + std::to_string(m.input->rank) + " never issued " + Where() +
                            " (its last issued is seq " + std::to_string(LastIssued(m)) + ")" +
                            LastSeen(m));
    }
    if (v->culprit_ranks.empty()) return false;
    v->kind = HangKind::kNeverIssued;
    return true;
  }

  // A send/receive waits and a member present has nothing in flight on the communicator: it has
  // not posted the matching op (kNeverIssued, without a sequence number).
  bool PeerIdle(HangVerdict* v) const {
    for (const Member& m : members_) {
      if (!m.progress || m.waits || m.progress->oldest_issue_ns > 0) continue;
      v->culprit_ranks.push_back(m.input->rank);
      v->evidence.push_back("rank " + std::to_string(m.input->rank) +
                            " has no send or receive in flight on communicator " +
                            CommText(comm_.id) + " while its peers wait in one" + LastSeen(m));
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
        v->evidence.push_back("rank " + std::to_string(m.input->rank) + "'s " + Where() +
                              " is queued behind " +
                              (m.progress->blocked_by.empty() ? std::string("a communication op")
                                                              : m.progress->blocked_by) +
                              ": it waits on other ranks and is not blamed");
        continue;
      }
      v->culprit_ranks.push_back(m.input->rank);
      std::string e = "rank " + std::to_string(m.input->rank) + "'s " + Where() +
                      " was issued but its GPU never started it: ";
      e += m.progress->blocked_by.empty()
               ? "earlier work on its stream has not finished"
               : "its stream is still busy with " + m.progress->blocked_by;
      v->evidence.push_back(e);
    }
    if (v->culprit_ranks.empty()) return false;
    v->kind = HangKind::kNotStarted;
    return true;
  }

  // True when a member's op here is queued behind another communicator's op; *upstream gets
  // that communicator (0 when unknown).
  bool QueuedBehindCommunication(uint64_t* upstream) const {
    for (const Member& m : members_) {
      const Arrival* a = m.inflight_at_stall();
      if (!p2p_ && a && a->seq == stall_ && a->state == OpState::kQueued &&
          m.progress->blocked_by_communication && m.progress->blocked_by_comm_id != comm_.id) {
        *upstream = m.progress->blocked_by_comm_id;
        return true;
      }
    }
    return false;
  }

  // Members whose progress is among the inputs.
  size_t Known() const {
    size_t known = 0;
    for (const Member& m : members_) known += m.progress != nullptr;
    return known;
  }

  void Stuck(HangVerdict* v) const {
    const size_t known = Known();
    if (known < static_cast<size_t>(comm_.size)) {
      v->kind = HangKind::kWaitingOnRemote;
      v->evidence.push_back(
          std::to_string(comm_.size - known) + " of the communicator's " +
          std::to_string(comm_.size) + " members are not among the inputs, and the ranks given " +
          (p2p_ ? "wait in a send or receive on communicator " + CommText(comm_.id)
                : "all issued " + Where()) +
          ": the culprit is among the others (combine the nodes' answers)");
      return;
    }
    v->kind = HangKind::kStuckInCollective;
    const std::string what = p2p_ ? "every member waits in " + Where() + " for "
                                  : "every member issued " + Where() + " and none completed it for ";
    if (v->downstream) {
      v->evidence.push_back(what + DurationText(v->stalled_s) +
                            ": it waits behind a stalled communication op (above), no rank is "
                            "blamed");
      return;
    }
    v->evidence.push_back(what + DurationText(v->stalled_s) +
                          ": a communication fault, no rank is blamed");
  }

  const std::vector<RankInput>& ranks_;
  const CommView& comm_;
  const Options& options_;
  int64_t base_threshold_ns_ = 0;
  int64_t threshold_ns_ = 0;
  int history_ = 0;  // completions the base threshold was derived from
  bool early_ = false;  // the verdict was judged at early_hang_ns
  bool disagree_ = false;  // the members given issued different calls at the stall (Mismatch)
  uint64_t stall_ = 0;
  bool p2p_ = false;
  std::vector<Member> members_;
};


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

std::string CrashFrameText(const std::string& innermost, const std::string& app_frame,
                           bool python_exception, const std::string& exception_type,
                           const std::string& exception_message) {
  const std::string frame = app_frame.empty() || app_frame == innermost
                                ? innermost
                                : innermost.empty() ? app_frame : app_frame + " via " + innermost;
  if (!python_exception) return frame;
  std::string message = exception_message.substr(0, kMaxVerdictMessageBytes);
  for (char& c : message) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  const std::string what =
      "uncaught " + exception_type + (message.empty() ? "" : ": " + message);
  return frame.empty() ? "[" + what + "]" : frame + " [" + what + "]";
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


int64_t HangThresholdNs(std::vector<int64_t> completion_ns, const Options& options) {
  const int64_t hi = options.hang_timeout_ns;
  const int64_t lo = std::min(options.min_hang_ns, hi);
  if (completion_ns.empty()) return hi;
  std::sort(completion_ns.begin(), completion_ns.end());
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < completion_ns.size(); ++i) {
    gaps.push_back(completion_ns[i] - completion_ns[i - 1]);
  }
  const size_t need = static_cast<size_t>(std::max(options.min_cadence_samples, 2));
  // Pauses after the warm-up: the first instances connect and compile, which is no pause the job
  // will repeat.
  const size_t warm = std::min(gaps.size(), need - 1);
  const double longest =
      warm == gaps.size()
          ? 0
          : static_cast<double>(*std::max_element(gaps.begin() + warm, gaps.end()));
  double t = options.pause_factor * longest;
  if (completion_ns.size() < need) {
    t = std::max(t, static_cast<double>(options.early_hang_ns));
  } else {
    const size_t keep = static_cast<size_t>(std::max(options.cadence_window, 1));
    if (gaps.size() > keep) gaps.erase(gaps.begin(), gaps.end() - keep);
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    t = std::max(t, options.cadence_factor * static_cast<double>(gaps[gaps.size() / 2]));
  }
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

// The job's first failure among the inputs (the rank; -1 when no input exited abnormally): the
// earliest abnormal exit, unless a fault signal came within kSameFailureNs of it (as ExitOrder).
int32_t JobFirstFailure(const std::vector<RankInput>& ranks) {
  std::vector<const RankInput*> failed;
  for (const RankInput& r : ranks) {
    if (AbnormalExit(r.exit)) failed.push_back(&r);
  }
  if (failed.empty()) return -1;
  std::sort(failed.begin(), failed.end(), [](const RankInput* a, const RankInput* b) {
    return std::make_pair(a->exit.at_ns, a->rank) < std::make_pair(b->exit.at_ns, b->rank);
  });
  for (const RankInput* r : failed) {
    if (r->exit.at_ns - failed.front()->exit.at_ns > kSameFailureNs) break;
    if (FaultSignal(r->exit)) return r->rank;
  }
  return failed.front()->rank;
}

// An exited verdict whose first failure exited after the job's first failure is its
// consequence (a rank that exits on NCCL's remote error heads the verdict of its own
// communicators, which the first failure is not in): dropped when a verdict names the job's
// first failure.
void DropLaterFailures(const std::vector<RankInput>& ranks, std::vector<HangVerdict>* verdicts) {
  const int32_t first = JobFirstFailure(ranks);
  auto names = [first](const HangVerdict& v) {
    return v.kind == HangKind::kExited && !v.culprit_ranks.empty() &&
           v.culprit_ranks.front() == first;
  };
  if (first < 0 || std::none_of(verdicts->begin(), verdicts->end(), names)) return;
  verdicts->erase(std::remove_if(verdicts->begin(), verdicts->end(),
                                 [&names](const HangVerdict& v) {
                                   return v.kind == HangKind::kExited && !names(v);
                                 }),
                  verdicts->end());
}

// Verdicts that follow from another stall and blame no rank are dropped when a verdict that does
// not follow from another remains (that one names the cause), and when the communicator they
// wait behind is among the inputs: its own verdict will name the cause once its threshold
// passes (a communicator with a longer threshold, e.g. a job's first steps), and a verdict now
// would head with a consequence (and an automatic dump would record it).
void DropDownstream(const std::vector<CommView>& comms, std::vector<HangVerdict>* verdicts) {
  const bool has_root = std::any_of(verdicts->begin(), verdicts->end(),
                                    [](const HangVerdict& v) { return !v.downstream; });
  auto judged_here = [&comms](uint64_t id) {
    auto it = std::lower_bound(comms.begin(), comms.end(), id,
                               [](const CommView& c, uint64_t i) { return c.id < i; });
    return id != 0 && it != comms.end() && it->id == id;
  };
  verdicts->erase(std::remove_if(verdicts->begin(), verdicts->end(),
                                 [&](const HangVerdict& v) {
                                   return v.downstream && v.culprit_ranks.empty() &&
                                          (has_root || judged_here(v.upstream_comm_id));
                                 }),
                  verdicts->end());
}

// The documented order (docs/analysis.md "Order"): kind, the first failure for exits, verdicts
// that name their cause before those that follow from another, culprits before none, then the
// lowest culprit rank and communicator: the same inputs give the same headline.
bool HeadsBefore(const HangVerdict& a, const HangVerdict& b) {
  auto key = [](const HangVerdict& v) {
    return std::make_tuple(Severity(v.kind), v.kind == HangKind::kExited ? v.first_exit_ns : 0,
                           v.downstream, v.culprit_ranks.empty(),
                           v.culprit_ranks.empty() ? 0 : v.culprit_ranks.front(), v.comm_id,
                           v.seq);
  };
  return key(a) < key(b);
}

std::vector<HangVerdict> FindHangs(const std::vector<RankInput>& ranks,
                                   const std::vector<CommView>& comms, const Options& options,
                                   std::vector<CommThreshold>* thresholds) {
  std::vector<HangVerdict> out;
  for (const CommView& comm : comms) {
    CommHang hang(ranks, comm, options);
    hang.Check(&out);
    if (thresholds != nullptr) {
      thresholds->push_back({comm.id, hang.threshold_ns(), hang.history()});
    }
    CompletedMismatch(ranks, comm, &out);
  }
  DropBlockedCulprits(&out);
  DropLaterFailures(ranks, &out);
  DropDownstream(comms, &out);
  std::stable_sort(out.begin(), out.end(), HeadsBefore);
  return out;
}

}  // namespace analysis
}  // namespace xtimer

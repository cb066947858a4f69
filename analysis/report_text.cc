#include "analysis/report_text.h"

#include <algorithm>
#include <cstdio>

#include "analysis/passes.h"

namespace xtimer {
namespace analysis {
namespace {

std::string Ranks(const std::vector<int32_t>& r) {
  return (r.size() == 1 ? "rank " : "ranks ") + RankList(r);
}

std::string Waiters(const HangVerdict& v) {
  if (v.waiting_ranks.empty()) return "";
  return "; " + Ranks(v.waiting_ranks) + (v.waiting_ranks.size() == 1 ? " waits" : " wait");
}

std::string Fixed(const char* fmt, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void Evidence(const std::vector<std::string>& evidence, std::string* out) {
  for (const std::string& e : evidence) *out += "    - " + e + "\n";
}

void BandwidthTable(const std::vector<BusBandwidth>& rows, std::string* out) {
  if (rows.empty()) {
    *out += "Bus bandwidth: no complete collective instances.\n";
    return;
  }
  *out += "Bus bandwidth (GB/s; observed from each rank's own GPU time, true from the transfer "
          "after the last arrival):\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %6s  %-18s  %-14s  %14s  %9s  %9s  %9s\n", "rank", "comm",
                "op", "bytes", "instances", "observed", "true");
  *out += line;
  for (const BusBandwidth& b : rows) {
    std::snprintf(line, sizeof line, "  %6d  %-18s  %-14s  %14llu  %9llu  %9.2f  %9.2f\n", b.rank,
                  CommText(b.comm_id).c_str(), OpText(b.op).c_str(),
                  static_cast<unsigned long long>(b.bytes),
                  static_cast<unsigned long long>(b.instances), b.observed_bytes_per_second() / 1e9,
                  b.true_bytes_per_second() / 1e9);
    *out += line;
  }
}

}  // namespace

std::string VerdictSentence(const HangVerdict& v) {
  const std::string where = VerdictWhere(v);
  std::string s = std::string("Hang (") + HangKindName(v.kind) +
                  (v.mismatch.empty() ? "" : ", " + v.mismatch + " differs") + "): ";
  const auto& c = v.culprit_ranks;
  switch (v.kind) {
    case HangKind::kExited:
      s += Ranks(c) + " exited" + Waiters(v) + (v.waiting_ranks.empty() ? " on " : " in ") + where;
      break;
    case HangKind::kMismatch:
      s += Ranks(c) + " issued a different " + v.mismatch + " than the others at " + where +
           Waiters(v) + (v.waiting_ranks.empty() ? "" : " in it");
      break;
    case HangKind::kNeverIssued:
      s += Ranks(c) + " never issued " + where + Waiters(v) + (v.waiting_ranks.empty() ? "" : " in it");
      break;
    case HangKind::kNotStarted:
      s += Ranks(c) + " issued " + where +
           " but the GPU never started it (earlier work on the stream)" + Waiters(v) +
           (v.waiting_ranks.empty() ? "" : " in it");
      break;
    case HangKind::kStuckInCollective:
      s += "every member is inside " + where + " and none completed it: " +
           (v.downstream ? "it waits behind another stall, " : "a communication fault, ") +
           "no rank blamed";
      break;
    case HangKind::kWaitingOnRemote:
      s += Ranks(v.waiting_ranks) + " wait in " + where +
           "; the culprit is among members on other nodes";
      break;
  }
  if (v.stalled_s > 0) {
    s += " (stalled " + DurationText(v.stalled_s) + ", threshold " + DurationText(v.threshold_s) +
         ")";
  } else {
    s += " (completed instances differ)";
  }
  return s + ".";
}

std::string StragglerSentence(const Straggler& s) {
  if (s.rank < 0) {
    return "Slow link on communicator " + CommText(s.comm_id) +
           (s.group.empty() ? "" : " (" + s.group + ")") +
           ": cause link, no rank blamed; about " + DurationText(s.wait_caused_s) +
           " of rank time lost.";
  }
  std::string doing;
  if (!s.host.empty()) {
    doing = " (the host was in " + s.host.front().text + " " +
            DurationText(s.host.front().seconds) + " of the " + DurationText(s.host_idle_s) +
            " its GPU sat idle before its late arrivals)";
  }
  return "Rank " + std::to_string(s.rank) + " on communicator " + CommText(s.comm_id) +
         (s.group.empty() ? "" : " (" + s.group + ")") + ": cause " + CauseName(s.cause) + doing +
         "; arrived last in " + Fixed("%.0f%%", 100 * s.share_last) + " of instances, " +
         DurationText(s.mean_lateness_s) + " late on average, caused " +
         DurationText(s.wait_caused_s) + " of waiting.";
}

// "Steps (marked by the job, 8 ranks): median 6.60 ms (p10 6.41, p90 6.83 ms) over 320 steps;
// per rank 6.55 to 6.70 ms (rank 3 the slowest)."
void StepsText(const std::vector<RankStepStats>& steps, std::string* out) {
  if (steps.empty()) return;
  std::vector<double> medians;
  size_t count = 0;
  const RankStepStats* slowest = &steps.front();
  double lo = steps.front().median_s, p10 = 0, p90 = 0;
  for (const RankStepStats& s : steps) {
    medians.push_back(s.median_s);
    count += s.count;
    p10 += s.p10_s / steps.size();
    p90 += s.p90_s / steps.size();
    lo = std::min(lo, s.median_s);
    if (s.median_s > slowest->median_s) slowest = &s;
  }
  std::sort(medians.begin(), medians.end());
  *out += "Steps (marked by the job, " + std::to_string(steps.size()) +
          (steps.size() == 1 ? " rank" : " ranks") + "): median " +
          DurationText(medians[medians.size() / 2]) + " (p10 " + DurationText(p10) + ", p90 " +
          DurationText(p90) + ", the ranks' mean) over " + std::to_string(count) + " steps";
  if (steps.size() > 1) {
    *out += "; per rank " + DurationText(lo) + " to " + DurationText(slowest->median_s) +
            " (rank " + std::to_string(slowest->rank) + " the slowest)";
  }
  *out += ".\n";
}

std::string ReportText(const Report& report) {
  std::string out;
  if (report.hangs.empty()) {
    out += "No hang.\n";
  } else {
    for (size_t i = 0; i < report.hangs.size(); ++i) {
      if (i == 1) out += "Other verdicts:\n";
      out += (i ? "  " : "") + VerdictSentence(report.hangs[i]) + "\n";
      Evidence(report.hangs[i].evidence, &out);
    }
  }
  out += "\n";
  if (report.stragglers.empty()) {
    out += "No stragglers: " + std::to_string(report.instances) +
           " complete collective instances, balanced.\n";
  } else {
    out += "Stragglers (worst first, over " + std::to_string(report.instances) +
           " complete collective instances):\n";
    for (const Straggler& s : report.stragglers) {
      out += "  " + StragglerSentence(s) + "\n";
      Evidence(s.evidence, &out);
    }
  }
  if (report.bounding_stage >= 0) {
    out += "The pipeline stage that bounds the step: " + std::to_string(report.bounding_stage) +
           " (its ranks caused the most waiting).\n";
  }
  StepsText(report.steps, &out);
  out += "\n";
  BandwidthTable(report.bus_bandwidth, &out);
  return out;
}

}  // namespace analysis
}  // namespace xtimer

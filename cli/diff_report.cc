#include "cli/diff_report.h"

#include <cmath>
#include <cstdio>

#include "format/record.h"
#include "util/json.h"
#include "util/kernel_name.h"

namespace xtimer {
namespace cli {
namespace {

// A grown rank's ops named in the text: up to 3, each with at least a tenth of its growth.
constexpr size_t kOpsPerRank = 3;
constexpr double kOpShareOfGrowth = 0.1;

std::string Format(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

std::string Num(double v) { return std::isfinite(v) ? Format("%.6g", v) : "null"; }

std::string Change(double change, uint64_t count_a) {
  if (std::isfinite(change)) return Format("%+.1f%%", change * 100);
  return count_a == 0 ? "new" : "gone";
}

std::string DType(const OpSignature& s) {
  return s.dtype ? format::DTypeName(static_cast<format::DType>(s.dtype)) : "-";
}

std::string Row(const DiffRow& r) {
  const OpSignature& s = r.signature;
  std::string tp;
  if (*r.unit) {
    char b[64];
    std::snprintf(b, sizeof(b), "%.4g -> %.4g %s", r.a.throughput, r.b.throughput, r.unit);
    tp = b;
  }
  char line[512];
  std::snprintf(line, sizeof(line), "%+14.3f  %-22.22s %-16s %-6s %5s %9llu %9llu %11.1f %11.1f %8s %s\n",
                r.impact_s * 1e3, util::ShortKernelName(s.name).c_str(), s.Shape().c_str(),
                DType(s).c_str(),
                s.comm_size ? std::to_string(s.comm_size).c_str() : "-",
                static_cast<unsigned long long>(r.a.count),
                static_cast<unsigned long long>(r.b.count), r.a.mean_s * 1e6, r.b.mean_s * 1e6,
                Change(r.change, r.a.count).c_str(), tp.c_str());
  return line;
}

// "rank 5: own work +49.7% beyond the other ranks' (+9.988 ms): GemmEx 4096x4096x4096 mean
// +49.7% (median rank +0.0%)"
std::string RankLine(const RankDiff& d) {
  std::string out = "  rank " + std::to_string(d.rank) + ": own work " +
                    Format("%+.1f%%", d.change * 100) + " beyond the other ranks' (" +
                    Format("%+.3f", d.excess_s * 1e3) + " ms):";
  size_t n = 0;
  for (const RankOpDiff& op : d.ops) {
    if (n == kOpsPerRank || !(op.excess_s >= kOpShareOfGrowth * d.excess_s)) break;
    const std::string shape = op.signature.Shape();
    out += std::string(n++ ? "; " : " ") + util::ShortKernelName(op.signature.name) +
           (shape.empty() ? "" : " " + shape);
    if (std::isfinite(op.change)) {
      out += " mean " + Change(op.change, op.a.count) + " (median rank " +
             Format("%+.1f%%", op.median_change * 100) + ")";
    } else {
      out += op.b.count ? " (new)" : " (gone)";
    }
  }
  return out + "\n";
}

std::string RanksText(const std::vector<RankDiff>& ranks) {
  std::string out;
  size_t grew = 0;
  for (const RankDiff& d : ranks) {
    if (d.grew) out += RankLine(d), ++grew;
  }
  const std::string which = "own work (computation, copies, kernels) grew beyond the other "
                            "ranks' by " + Format("%.0f%%", kRankGrowthFloor * 100) + " or more";
  if (grew == 0) {
    return "\nNo rank whose " + which + " (" + std::to_string(ranks.size()) +
           " ranks compared).\n";
  }
  return "\nRanks whose " + which + ": " + std::to_string(grew) + " of " +
         std::to_string(ranks.size()) + "\n" + out;
}

std::string StatsJson(const OpStats& s) {
  return "{\"count\": " + std::to_string(s.count) + ", \"mean_s\": " + Num(s.mean_s) +
         ", \"median_s\": " + Num(s.median_s) + ", \"p90_s\": " + Num(s.p90_s) +
         ", \"throughput\": " + Num(s.throughput) + "}";
}

std::string SignatureJson(const OpSignature& s) {
  return "\"op\": " + JsonQuote(s.name) + ", \"kind\": " +
         JsonQuote(format::OpKindName(static_cast<format::OpKind>(s.kind))) +
         ", \"shape\": " + JsonQuote(s.Shape()) + ", \"m\": " + std::to_string(s.m) +
         ", \"n\": " + std::to_string(s.n) + ", \"k\": " + std::to_string(s.k) +
         ", \"batch\": " + std::to_string(s.batch) + ", \"bytes\": " + std::to_string(s.bytes) +
         ", \"dtype\": " + JsonQuote(format::DTypeName(static_cast<format::DType>(s.dtype))) +
         ", \"comm_size\": " + std::to_string(s.comm_size);
}

std::string WorkJson(const RankWork& w) {
  return "{\"count\": " + std::to_string(w.count) +
         ", \"mean_s\": " + Num(w.count ? w.total_ns / w.count * 1e-9 : 0) + "}";
}

std::string RankJson(const RankDiff& d) {
  std::string out = "{\"rank\": " + std::to_string(d.rank) + ", \"change\": " + Num(d.change) +
                    ", \"excess_s\": " + Num(d.excess_s) + ", \"growth_s\": " + Num(d.growth_s) +
                    ", \"grew\": " + (d.grew ? "true" : "false") + ", \"ops\": [";
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const RankOpDiff& op = d.ops[i];
    out += std::string(i ? ", " : "") + "{" + SignatureJson(op.signature) +
           ", \"a\": " + WorkJson(op.a) + ", \"b\": " + WorkJson(op.b) +
           ", \"change\": " + Num(op.change) + ", \"median_change\": " + Num(op.median_change) +
           ", \"impact_s\": " + Num(op.impact_s) + ", \"excess_s\": " + Num(op.excess_s) + "}";
  }
  return out + "]}";
}

std::string TableJson(const OpTable& t) {
  return "{\"ranks\": " + std::to_string(t.ranks) + ", \"events\": " + std::to_string(t.events) +
         "}";
}

}  // namespace

std::string DiffText(const DiffReport& r) {
  char head[256];
  std::snprintf(head, sizeof(head), "A: %d ranks, %llu events; B: %d ranks, %llu events\n",
                r.a->ranks, static_cast<unsigned long long>(r.a->events), r.b->ranks,
                static_cast<unsigned long long>(r.b->events));
  std::string out = head;
  std::snprintf(head, sizeof(head), "%12s  %-22s %-16s %-6s %5s %9s %9s %11s %11s %8s %17s\n",
                "impact ms/rank", "op", "shape/bytes", "dtype", "n", "calls A", "calls B",
                "mean A us", "mean B us", "change", "throughput A -> B");
  out += head;
  for (size_t i = 0; i < r.rows.size() && i < r.top; ++i) out += Row(r.rows[i]);
  return out + RanksText(r.ranks);
}

std::string DiffJson(const DiffReport& r) {
  std::string out = "{\"a\": " + TableJson(*r.a) + ", \"b\": " + TableJson(*r.b) +
                    ", \"rank_growth_floor\": " + Num(kRankGrowthFloor) + ", \"ops\": [";
  for (size_t i = 0; i < r.rows.size() && i < r.top; ++i) {
    const DiffRow& row = r.rows[i];
    out += i ? ",\n  " : "\n  ";
    out += "{" + SignatureJson(row.signature) + ", \"unit\": " + JsonQuote(row.unit) +
           ", \"a\": " + StatsJson(row.a) + ", \"b\": " + StatsJson(row.b) +
           ", \"change\": " + Num(row.change) + ", \"impact_s_per_rank\": " + Num(row.impact_s) +
           "}";
  }
  out += "\n], \"ranks\": [";
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    out += (i ? ",\n  " : "\n  ") + RankJson(r.ranks[i]);
  }
  return out + "\n]}\n";
}

}  // namespace cli
}  // namespace xtimer

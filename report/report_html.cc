#include "report/report_html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/report_text.h"
#include "report/svg_chart.h"
#include "util/xml_escape.h"

namespace xtimer {
namespace report {
namespace {

using analysis::BusBandwidth;

constexpr char kStyle[] = R"CSS(
body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f2f2f2}
td.l,th.l{text-align:left}tr.hl td{background:#fde8e3;font-weight:bold}
.warn{background:#fff4d6;border:1px solid #e0b84a;padding:6px 12px}
.verdict{border-left:4px solid #cc3311;padding:2px 12px;margin:10px 0;background:#fdf3f0}
.ok{border-left:4px solid #228833;padding:2px 12px;background:#eef8ee}
.note{color:#555;font-size:13px}
)CSS";

std::string E(const std::string& s) { return XmlEscape(s); }

std::string Fmt(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string RankLabel(const RankRow& r) {
  return "rank " + std::to_string(r.rank) + (r.node.empty() ? "" : " (" + r.node + ")");
}

std::set<int32_t> StragglerRanks(const analysis::Report& report) {
  std::set<int32_t> out;
  for (const analysis::Straggler& s : report.stragglers) {
    if (s.rank >= 0) out.insert(s.rank);
  }
  return out;
}

// Keeps at most kMaxChartRows rows: the highlighted ones, then the largest (or smallest) first
// value; back in their first order. Returns how many were left out.
size_t Trim(bool keep_largest, std::vector<ChartRow>* rows) {
  if (rows->size() <= kMaxChartRows) return 0;
  std::vector<size_t> order(rows->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto value = [&](size_t i) { return (*rows)[i].values.empty() ? 0 : (*rows)[i].values[0]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((*rows)[a].highlight != (*rows)[b].highlight) return (*rows)[a].highlight;
    return keep_largest ? value(a) > value(b) : value(a) < value(b);
  });
  order.resize(kMaxChartRows);
  std::sort(order.begin(), order.end());
  std::vector<ChartRow> kept;
  for (size_t i : order) kept.push_back(std::move((*rows)[i]));
  const size_t left_out = rows->size() - kept.size();
  *rows = std::move(kept);
  return left_out;
}

std::string ChartBlock(Chart chart, bool keep_largest, const std::string& what) {
  const size_t left_out = Trim(keep_largest, &chart.rows);
  std::string out = "<figure>" + BarChartSvg(chart);
  if (left_out > 0) {
    out += "<figcaption class=\"note\">" + std::to_string(left_out) + " " + E(what) +
           " left out of the chart (the highlighted ones and the most extreme are shown; the "
           "table has all).</figcaption>";
  }
  return out + "</figure>\n";
}

void Evidence(const std::vector<std::string>& evidence, std::string* out) {
  if (evidence.empty()) return;
  *out += "<ul>";
  for (const std::string& e : evidence) *out += "<li>" + E(e) + "</li>";
  *out += "</ul>";
}

void Diagnosis(const analysis::Report& r, std::string* out) {
  *out += "<section id=\"diagnosis\"><h2>Diagnosis</h2>\n";
  if (r.hangs.empty()) *out += "<p class=\"ok\">No hang.</p>\n";
  for (const analysis::HangVerdict& v : r.hangs) {
    *out += "<div class=\"verdict hang\"><p>" + E(analysis::VerdictSentence(v)) + "</p>";
    Evidence(v.evidence, out);
    *out += "</div>\n";
  }
  if (r.stragglers.empty()) {
    *out += "<p class=\"ok\">No stragglers: " + std::to_string(r.instances) +
            " complete collective instances, balanced.</p>\n";
  } else {
    *out += "<p>Stragglers (worst first, over " + std::to_string(r.instances) +
            " complete collective instances):</p>\n";
  }
  for (const analysis::Straggler& s : r.stragglers) {
    *out += "<div class=\"verdict straggler\"><p>" + E(analysis::StragglerSentence(s)) + "</p>";
    Evidence(s.evidence, out);
    *out += "</div>\n";
  }
  if (r.bounding_stage >= 0) {
    *out += "<p>The pipeline stage that bounds the step: " + std::to_string(r.bounding_stage) +
            " (its ranks caused the most waiting).</p>\n";
  }
  *out += "</section>\n";
}

// Where a rank's step time comes from, for its table row.
std::string StepSource(const RankRow& r) {
  if (r.step_marked) return "marked steps";
  if (r.collectives_per_step == 0) return "";
  return "guessed: " + std::to_string(r.collectives_per_step) +
         (r.collectives_per_step == 1 ? " collective" : " collectives") + " per step";
}

void RankCharts(const ReportPage& p, std::string* out) {
  const std::set<int32_t> slow = StragglerRanks(p.analysis);
  Chart step{"Step time per rank", "ms", {}, {}};
  Chart flops{"Matmul throughput per rank", "TFLOP/s", {}, {}};
  for (const RankRow& r : p.ranks) {
    const bool hl = slow.count(r.rank) > 0;
    step.rows.push_back({RankLabel(r), {r.step_s * 1e3}, hl});
    flops.rows.push_back({RankLabel(r), {r.matmul_flops / 1e12}, hl});
  }
  *out += "<section id=\"ranks\"><h2>Per rank</h2>\n<h3>Step time</h3>\n<p class=\"note\">"
          "The median step per rank: of the steps the job marks (NVTX ranges named "
          "XTIMER_STEP_RANGE) where it marks them, else guessed from its collectives: the "
          "shortest period over which they repeat, in operations and in time (the table says "
          "which, and how many collectives per step it counted); empty where neither is known. "
          "Stragglers in red.</p>\n" +
          ChartBlock(step, true, "ranks") +
          "<h3>Matmul FLOP/s</h3>\n<p class=\"note\">The rank's matmul FLOP over their GPU "
          "time.</p>\n" + ChartBlock(flops, false, "ranks");
  *out += "<table><tr><th>rank</th><th class=\"l\">node</th><th>step time (ms)</th>"
          "<th class=\"l\">step from</th><th>matmul TFLOP/s</th></tr>\n";
  for (const RankRow& r : p.ranks) {
    *out += std::string(slow.count(r.rank) ? "<tr class=\"hl\">" : "<tr>") + "<td>" +
            std::to_string(r.rank) + "</td><td class=\"l\">" + E(r.node) + "</td><td>" +
            (r.step_s > 0 ? Fmt("%.3f", r.step_s * 1e3) : "") + "</td><td class=\"l\">" +
            StepSource(r) + "</td><td>" +
            (r.matmul_flops > 0 ? Fmt("%.2f", r.matmul_flops / 1e12) : "") + "</td></tr>\n";
  }
  *out += "</table></section>\n";
}

std::string BandwidthLabel(const BusBandwidth& b) {
  return analysis::OpText(b.op) + " " + std::to_string(b.bytes) + " B on " +
         analysis::CommText(b.comm_id);
}

void Bandwidth(const analysis::Report& r, std::string* out) {
  const std::vector<BusBandwidth> rows = PerCommunicator(r.bus_bandwidth);
  Chart chart{"Bus bandwidth per communicator", "GB/s", {"observed", "true"}, {}};
  for (const BusBandwidth& b : rows) {
    chart.rows.push_back({BandwidthLabel(b),
                          {b.observed_bytes_per_second() / 1e9, b.true_bytes_per_second() / 1e9},
                          false});
  }
  *out += "<section id=\"bandwidth\"><h2>Bus bandwidth per communicator</h2>\n<p class=\"note\">"
          "Observed: bus bytes over each rank's own GPU time in the collective (waiting for late "
          "ranks included). True: over the transfer after the last arrival. Summed over the "
          "ranks (docs/analysis.md).</p>\n" + ChartBlock(chart, false, "rows");
  *out += "<table><tr><th class=\"l\">communicator</th><th class=\"l\">op</th><th>bytes</th>"
          "<th>instances</th><th>observed GB/s</th><th>true GB/s</th></tr>\n";
  for (const BusBandwidth& b : rows) {
    *out += "<tr><td class=\"l\">" + analysis::CommText(b.comm_id) + "</td><td class=\"l\">" +
            E(analysis::OpText(b.op)) + "</td><td>" + std::to_string(b.bytes) + "</td><td>" +
            std::to_string(b.instances) + "</td><td>" +
            Fmt("%.2f", b.observed_bytes_per_second() / 1e9) + "</td><td>" +
            Fmt("%.2f", b.true_bytes_per_second() / 1e9) + "</td></tr>\n";
  }
  *out += "</table></section>\n";
}

void Ops(const ReportPage& p, std::string* out) {
  *out += "<section id=\"ops\"><h2>Slowest operations by signature</h2>\n<p class=\"note\">"
          "The most total time first (" + std::to_string(p.ops.size()) + " of " +
          std::to_string(p.ops_total) + " signatures); waiting removed: a collective counts its "
          "transfer, a send and its receive count once (docs/analyze-cli.md).</p>\n"
          "<table><tr><th class=\"l\">operation</th><th class=\"l\">shape</th><th class=\"l\">"
          "dtype</th><th>calls</th><th>total s</th><th>mean ms</th><th>median ms</th>"
          "<th>p90 ms</th><th>throughput</th></tr>\n";
  for (const OpRow& o : p.ops) {
    // A shortened kernel name opens to its full signature with one click.
    const std::string name = o.signature.empty() ? E(o.name)
                                                 : "<details><summary>" + E(o.name) +
                                                       "</summary>" + E(o.signature) + "</details>";
    *out += "<tr><td class=\"l\">" + name + "</td><td class=\"l\">" + E(o.shape) +
            "</td><td class=\"l\">" + E(o.dtype) + "</td><td>" + std::to_string(o.count) +
            "</td><td>" + Fmt("%.4f", o.total_s) + "</td><td>" + Fmt("%.3f", o.mean_s * 1e3) +
            "</td><td>" + Fmt("%.3f", o.median_s * 1e3) + "</td><td>" +
            Fmt("%.3f", o.p90_s * 1e3) + "</td><td>" +
            (o.throughput > 0 ? Fmt("%.2f", o.throughput) + " " + E(o.unit) : "") + "</td></tr>\n";
  }
  *out += "</table></section>\n";
}

void Cost(const ReportPage& p, std::string* out) {
  *out += "<section id=\"cost\"><h2>What xtimer cost</h2>\n";
  if (p.cost.empty()) {
    *out += "<p class=\"note\">The dump does not say (its timeline files were written by an "
            "xtimerd before the overhead budget).</p></section>\n";
    return;
  }
  const CostRow* most = &p.cost.front();
  uint64_t calls = 0, timed = 0;
  for (const CostRow& c : p.cost) {
    if (c.own_share > most->own_share) most = &c;
    calls += c.calls;
    timed += c.timed;
  }
  *out += "<p>The hook spent at most " + Fmt("%.2f", most->own_share * 100) +
          "% of an application thread's time (rank " + std::to_string(most->rank) + ")" +
          (most->budget > 0 ? ", against a budget of " + Fmt("%.2f", most->budget * 100) + "%" : "") +
          "; it timed " + std::to_string(timed) + " of the " + std::to_string(calls) +
          " ops it saw and counted all of them.</p>\n<p class=\"note\">Per process, since the "
          "hook started (docs/hook.md, \"The overhead budget\"); not in it: the poller thread's "
          "calls. ";
  if (p.cost_unknown > 0) {
    *out += std::to_string(p.cost_unknown) + " file(s) do not say (written before it existed).";
  }
  *out += "</p>\n<table><tr><th class=\"l\">rank</th><th>hook time</th><th>budget</th>"
          "<th>ops</th><th>timed</th></tr>\n";
  for (const CostRow& c : p.cost) {
    *out += "<tr><td class=\"l\">" + E("rank " + std::to_string(c.rank) +
                                         (c.node.empty() ? "" : " (" + c.node + ")")) +
            "</td><td>" + Fmt("%.3f", c.own_share * 100) + "%</td><td>" +
            (c.budget > 0 ? Fmt("%.2f", c.budget * 100) + "%" : "") + "</td><td>" +
            std::to_string(c.calls) + "</td><td>" + std::to_string(c.timed) + "</td></tr>\n";
  }
  *out += "</table></section>\n";
}

void Links(const std::vector<Link>& links, std::string* out) {
  *out += "<section id=\"links\"><h2>Trace and flame graphs</h2>\n";
  if (links.empty()) {
    *out += "<p class=\"note\">No Perfetto trace (*.pftrace) or flame graph (stacks.svg) beside "
            "the dump: <code>xtimer timeline DIR -o DIR/trace.pftrace</code>, <code>xtimer "
            "stacks DIR -o DIR/stacks</code> (docs/report.md).</p>\n";
  } else {
    *out += "<ul>";
    for (const Link& l : links) {
      *out += "<li><a href=\"" + E(RelativeHref(l.path)) + "\">" + E(l.label) + ": " +
              E(l.path) + "</a></li>";
    }
    *out += "</ul>\n";
  }
  *out += "</section>\n";
}

}  // namespace

std::vector<BusBandwidth> PerCommunicator(const std::vector<BusBandwidth>& rows) {
  std::vector<BusBandwidth> out;
  std::map<std::tuple<uint64_t, uint16_t, uint64_t>, size_t> index;
  for (const BusBandwidth& b : rows) {
    auto key = std::make_tuple(b.comm_id, b.op, b.bytes);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      BusBandwidth sum;
      sum.comm_id = b.comm_id;
      sum.op = b.op;
      sum.bytes = b.bytes;
      out.push_back(sum);
    }
    BusBandwidth& s = out[it->second];
    s.instances = std::max(s.instances, b.instances);  // each rank counts the same instances
    s.own_bus_bytes += b.own_bus_bytes;
    s.own_ns += b.own_ns;
    s.transfer_bus_bytes += b.transfer_bus_bytes;
    s.transfer_ns += b.transfer_ns;
  }
  return out;
}

std::string RelativeHref(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = path.rfind("../", 0) == 0 ? "" : "./";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ReportHtml(const ReportPage& p) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                    "<meta name=\"generator\" content=\"" + E(p.version) + "\">\n"
                    "<title>xtimer report: " + E(p.job) + "</title>\n<style>" + kStyle +
                    "</style></head>\n<body>\n<h1>xtimer report: " + E(p.job) + "</h1>\n" +
                    "<p>" + E(p.summary) + "</p>\n";
  if (!p.problems.empty()) {
    out += "<div class=\"warn\"><p>Partial input: the report covers what could be read.</p><ul>";
    for (const std::string& pr : p.problems) out += "<li>" + E(pr) + "</li>";
    out += "</ul></div>\n";
  }
  Diagnosis(p.analysis, &out);
  RankCharts(p, &out);
  Bandwidth(p.analysis, &out);
  Ops(p, &out);
  Cost(p, &out);
  Links(p.links, &out);
  return out + "<p class=\"note\">Written by " + E(p.version) +
         " (docs/report.md).</p>\n</body></html>\n";
}

}  // namespace report
}  // namespace xtimer

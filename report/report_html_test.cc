#include "report/report_html.h"

#include <gtest/gtest.h>

#include <string>

#include "report/svg_chart.h"

namespace xtimer {
namespace report {
namespace {

constexpr char kHostile[] = "<script>alert(1)</script>";

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

ReportPage StragglerPage() {
  ReportPage p;
  p.job = kHostile;
  p.version = "1.0";
  p.summary = "read 8 files";
  for (int r = 0; r < 4; ++r) p.ranks.push_back({r, r < 2 ? "node0" : "node1", 0.0035, 5e13});
  p.ranks[3].matmul_flops = 3.8e13;
  analysis::Straggler s;
  s.rank = 3;
  s.comm_id = 0xabc;
  s.cause = analysis::Cause::kCompute;
  s.share_last = 1;
  s.evidence = {"GEMM " + std::string(kHostile) + " took 1.3x the median"};
  p.analysis.stragglers.push_back(s);
  p.analysis.instances = 20;
  OpRow op;
  op.name = kHostile;
  op.signature = std::string("void ns::") + kHostile + "(int)";
  op.count = 80;
  op.mean_s = 0.002;
  op.total_s = 0.16;
  op.throughput = 68.7;
  op.unit = "TFLOPS";
  p.ops = {op};
  p.ops_total = 2;
  p.links = {{"Perfetto trace", "node0/trace \"x\".pftrace"}};
  p.problems = {"node1/" + std::string(kHostile) + ".timeline: unreadable"};
  return p;
}

TEST(ReportHtmlTest, EscapesEveryInputString) {
  const std::string html = ReportHtml(StragglerPage());
  EXPECT_FALSE(Has(html, "<script")) << html;
  EXPECT_TRUE(Has(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_FALSE(Has(html, "trace \"x\""));
}

// A shortened kernel name opens to its full signature (one click: <details>); a name that is not
// shortened is shown as it is.
TEST(ReportHtmlTest, ShortKernelNameOpensToItsSignature) {
  ReportPage p = StragglerPage();
  p.ops[0].name = "vectorized_elementwise_kernel<4, ...>";
  p.ops[0].signature = "void at::native::vectorized_elementwise_kernel<4, F>(int)";
  OpRow plain = p.ops[0];
  plain.name = "GemmEx";
  plain.signature.clear();
  p.ops.push_back(plain);
  const std::string html = ReportHtml(p);
  EXPECT_TRUE(Has(html, "<td class=\"l\"><details><summary>vectorized_elementwise_kernel&lt;4, "
                        "...&gt;</summary>void at::native::vectorized_elementwise_kernel&lt;4, "
                        "F&gt;(int)</details></td>"))
      << html;
  EXPECT_TRUE(Has(html, "<td class=\"l\">GemmEx</td>")) << html;
}

// The rank table says where each step time comes from: marked steps, or the guess and its count.
TEST(ReportHtmlTest, SaysWhereEachStepTimeComesFrom) {
  ReportPage p = StragglerPage();
  p.ranks[0].step_marked = true;
  p.ranks[1].collectives_per_step = 20;
  p.ranks[2].collectives_per_step = 1;
  p.ranks[3].step_s = 0;
  const std::string html = ReportHtml(p);
  EXPECT_TRUE(Has(html, "<td>3.500</td><td class=\"l\">marked steps</td>")) << html;
  EXPECT_TRUE(Has(html, "<td>3.500</td><td class=\"l\">guessed: 20 collectives per step</td>"));
  EXPECT_TRUE(Has(html, "<td>3.500</td><td class=\"l\">guessed: 1 collective per step</td>"));
  EXPECT_TRUE(Has(html, "<td></td><td class=\"l\"></td>"));  // rank 3: not known
}

TEST(ReportHtmlTest, NamesTheStragglerAndItsCauseAsAnalyzeDoes) {
  const ReportPage p = StragglerPage();
  const std::string html = ReportHtml(p);
  EXPECT_TRUE(Has(html, "Rank 3 on communicator 0x0000000000000abc: cause compute")) << html;
  EXPECT_TRUE(Has(html, "took 1.3x the median"));
  EXPECT_TRUE(Has(html, "No hang."));
  EXPECT_TRUE(Has(html, "<tr class=\"hl\"><td>3</td>"));  // the straggler's row highlighted
  EXPECT_TRUE(Has(html, "Partial input"));
}

TEST(ReportHtmlTest, SaysWhatXtimerCostAndWhenTheDumpDoesNot) {
  ReportPage p = StragglerPage();
  const std::string none = ReportHtml(p);
  EXPECT_NE(none.find("The dump does not say"), std::string::npos);
  CostRow a;
  a.rank = 0;
  a.node = "n0";
  a.own_share = 0.004;
  a.budget = 0.01;
  a.calls = 1000;
  a.timed = 40;
  CostRow b = a;
  b.rank = 1;
  b.own_share = 0.0091;
  p.cost = {a, b};
  const std::string html = ReportHtml(p);
  EXPECT_NE(html.find("at most 0.91% of an application thread's time (rank 1), against a budget "
                      "of 1.00%; it timed 80 of the 2000 ops"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("The dump does not say"), std::string::npos);
}

TEST(ReportHtmlTest, SelfContained) {
  const std::string html = ReportHtml(StragglerPage());
  EXPECT_TRUE(Has(html, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  for (const char* bad : {"https:", "src=", "<link", "@import", "url("}) {
    EXPECT_FALSE(Has(html, bad)) << bad;
  }
  EXPECT_TRUE(Has(html, "href=\"./node0/trace%20%22x%22.pftrace\""));
}

TEST(ReportHtmlTest, RelativeHrefNeverReadsAsAScheme) {
  EXPECT_EQ(RelativeHref("javascript:alert(1)"), "./javascript%3Aalert%281%29");
  EXPECT_EQ(RelativeHref("../run1/stacks/stacks.svg"), "../run1/stacks/stacks.svg");
  EXPECT_EQ(RelativeHref("a b#c?.pftrace"), "./a%20b%23c%3F.pftrace");
}

TEST(PerCommunicatorTest, AddsSumsNotRates) {
  analysis::BusBandwidth x, y;
  x.rank = 0;
  y.rank = 1;
  x.comm_id = y.comm_id = 7;
  x.instances = y.instances = 10;
  x.own_bus_bytes = y.own_bus_bytes = 1e9;
  x.own_ns = 1e9;  // 1 GB/s
  y.own_ns = 3e9;  // 0.33 GB/s
  const auto rows = PerCommunicator({x, y});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].observed_bytes_per_second(), 0.5e9);
  EXPECT_EQ(rows[0].instances, 10u);
}

TEST(BarChartSvgTest, KeepsHighlightedRowsWhenTrimmed) {
  ReportPage p = StragglerPage();
  p.ranks.clear();
  for (int r = 0; r < 300; ++r) p.ranks.push_back({r, "n", 0.003, 5e13});
  p.analysis.stragglers[0].rank = 250;
  const std::string html = ReportHtml(p);
  EXPECT_TRUE(Has(html, "172 ranks left out of the chart"));
  EXPECT_TRUE(Has(html, ">rank 250 (n)</text>"));
}

TEST(BarChartSvgTest, EmptyChartSaysNoData) {
  Chart c{"t", "ms", {}, {{"rank 0", {0}, false}}};
  EXPECT_TRUE(Has(BarChartSvg(c), "no data"));
}

TEST(BarChartSvgTest, CutsLongLabelsKeepsThemInTheTooltip) {
  const std::string label(200, 'x');
  const std::string svg = BarChartSvg(Chart{"t", "GB/s", {}, {{label, {1.0}, false}}});
  EXPECT_TRUE(Has(svg, ">" + std::string(55, 'x') + "...</text>")) << svg;
  EXPECT_TRUE(Has(svg, "<title>" + label + ": 1 GB/s</title>"));
}

}  // namespace
}  // namespace report
}  // namespace xtimer

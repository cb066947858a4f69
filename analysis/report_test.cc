#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "analysis/report_text.h"
#include "analysis/synthetic.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace analysis {
namespace {

HangVerdict NeverIssued() {
  HangVerdict v;
  v.kind = HangKind::kNeverIssued;
  v.comm_id = 0xab;
  v.seq = 57;
  v.op = 32;  // AllReduce
  v.culprit_ranks = {2};
  v.waiting_ranks = {0, 1, 3};
  v.stalled_s = 42;
  v.threshold_s = 10;
  v.evidence = {"rank 2 never issued seq 57; last seen: \"GemmEx\""};
  return v;
}

TEST(ReportJson, EmptyReportHasEveryKey) {
  ReportContext ctx;
  ctx.clock_offsets_s = {{"node0", 0}, {"node1", -0.0015}};
  ctx.inputs.files = {"a/rank0.xtl"};
  ctx.inputs.ranks = {0, 1};
  ctx.inputs.missing_ranks = {5};
  ctx.inputs.groups = "tp2";
  EXPECT_EQ(ReportJson(Report(), ctx),
            "{\"hang\":null,\"hangs\":[],\"stragglers\":[],\"true_bus_bandwidth\":[],"
            "\"ranks\":[],\"steps\":[],\"bounding_stage\":null,\"instances\":0,"
            "\"clock_offsets_s\":{\"node0\":0,\"node1\":-0.0015},"
            "\"inputs\":{\"files\":[\"a/rank0.xtl\"],\"ranks\":[0,1],\"missing_ranks\":[5],"
            "\"warnings\":[],\"groups\":\"tp2\"}}");
}

TEST(ReportJson, VerdictFieldsAndEscaping) {
  EXPECT_EQ(HangVerdictJson(NeverIssued()),
            "{\"kind\":\"never_issued\",\"culprit_ranks\":[2],\"waiting_ranks\":[0,1,3],"
            "\"comm\":\"0x00000000000000ab\",\"seq\":57,\"op\":\"AllReduce\","
            "\"point_to_point\":false,\"mismatch\":null,"
            "\"stalled_s\":42,\"threshold_s\":10,\"downstream\":false,"
            "\"evidence\":[\"rank 2 never issued seq 57; last seen: \\\"GemmEx\\\"\"]}");
  Report r;
  r.hangs = {NeverIssued()};
  r.hangs[0].kind = HangKind::kMismatch;
  r.hangs[0].mismatch = "count";
  r.hangs[0].stalled_s = 0.0 / 0.0;  // never printed as nan
  std::string j = ReportJson(r, ReportContext());
  EXPECT_NE(j.find("\"hang\":{\"kind\":\"mismatch\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"mismatch\":\"count\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"stalled_s\":null"), std::string::npos) << j;
  EXPECT_NE(j.find("\"hangs\":[{\"kind\":\"mismatch\""), std::string::npos) << j;
}

TEST(ReportJson, StragglersBandwidthAndRanks) {
  SyntheticJob job;
  job.groups.tp = 4;
  job.groups.dp = 2;
  job.slow_rank = 5;
  std::vector<RankInput> ranks = MakeJob(job);
  Options o;
  o.now_ns = JobEnd(ranks) + 1;
  o.has_groups = true;
  o.groups = job.groups;
  std::string j = ReportJson(Analyze(ranks, o), ReportContext());
  EXPECT_NE(j.find("\"stragglers\":[{\"rank\":5,\"comm\":\"0x0000000000001001\",\"share_last\":"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"cause\":\"compute\",\"group\":\"tp\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"true_bus_bandwidth\":[{\"rank\":0,\"comm\":\"0x0000000000001000\","
                   "\"op\":\"AllReduce\",\"bytes\":67108864,\"instances\":300,"
                   "\"observed_bytes_per_second\":"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"ranks\":[{\"rank\":0,\"instances\":600,"), std::string::npos) << j;
  EXPECT_EQ(j.find("nan"), std::string::npos);
  EXPECT_EQ(j.find("inf"), std::string::npos);
}

TEST(ReportText, HangSentenceFirstThenStragglersThenBandwidth) {
  SyntheticJob job;
  job.groups.tp = 4;
  job.groups.dp = 2;
  job.slow_rank = 5;
  std::vector<RankInput> ranks = MakeJob(job);
  Options o;
  o.now_ns = JobEnd(ranks) + 1;
  Report r = Analyze(ranks, o);
  r.hangs = {NeverIssued()};
  std::string t = ReportText(r);
  EXPECT_EQ(t.find("Hang (never_issued): rank 2 never issued AllReduce seq 57 on communicator "
                   "0x00000000000000ab; ranks 0, 1 and 3 wait in it (stalled 42.0 s, threshold "
                   "10.0 s).\n    - rank 2 never issued seq 57"),
            0u)
      << t;
  size_t stragglers = t.find("Stragglers");
  size_t rank5 = t.find("Rank 5 on communicator 0x0000000000001001: cause compute");
  size_t table = t.find("Bus bandwidth (GB/s");
  EXPECT_NE(stragglers, std::string::npos) << t;
  EXPECT_GT(rank5, stragglers) << t;
  EXPECT_GT(table, rank5) << t;
}

TEST(ReportText, EveryKindReadsAsASentence) {
  for (HangKind k : {HangKind::kNeverIssued, HangKind::kMismatch, HangKind::kStuckInCollective,
                     HangKind::kExited, HangKind::kNotStarted, HangKind::kWaitingOnRemote}) {
    HangVerdict v = NeverIssued();
    v.kind = k;
    if (k == HangKind::kMismatch) v.mismatch = "op";
    std::string s = VerdictSentence(v);
    EXPECT_EQ(s.find(std::string("Hang (") + HangKindName(k)), 0u) << s;
    EXPECT_EQ(s.back(), '.') << s;
    EXPECT_NE(s.find("0x00000000000000ab"), std::string::npos) << s;
  }
  EXPECT_EQ(ReportText(Report()).find("No hang.\n"), 0u);
}

TEST(ReportText, SendReceiveVerdictHasNoUnknownOp) {
  HangVerdict v = NeverIssued();
  v.point_to_point = true;
  v.seq = 0;
  v.op = 0;
  const std::string s = VerdictSentence(v);
  EXPECT_NE(s.find("never issued a send/receive on communicator 0x00000000000000ab"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("Unknown"), std::string::npos) << s;
  const std::string json = HangVerdictJson(v);
  EXPECT_NE(json.find("\"op\":null,\"point_to_point\":true"), std::string::npos) << json;
}

}  // namespace
}  // namespace analysis
}  // namespace xtimer

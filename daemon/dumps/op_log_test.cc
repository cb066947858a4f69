#include "daemon/dumps/op_log.h"

#include <string>

#include "daemon/base/test_util.h"
#include "daemon/model/op_stats.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

format::OpRecord AllReduce(uint64_t bytes) {
  format::OpRecord r = MakeOp(Operation::kAllReduce, DType::kBF16, 2000000).op;
  r.bytes = bytes;
  r.count = bytes / 2;
  r.comm_id = 0xab;
  r.comm_size = 8;
  r.seq = 41;
  r.gpu_start_ns = 1700000000123456789;
  return r;
}

format::OpRecord Gemm() {
  format::OpRecord r = MakeOp(Operation::kGemmEx, DType::kBF16, 1000000).op;
  r.m = 4096;
  r.n = 1024;
  r.k = 512;
  return r;
}

TEST(OpLogSampleTest, RateTenthKeepsTenPercentDeterministically) {
  int kept = 0, kept_again = 0, kept_other_seed = 0, same = 0;
  for (uint64_t seq = 0; seq < 100000; ++seq) {
    const bool a = Sampled(0.1, 42, 7, seq);
    kept += a;
    kept_again += Sampled(0.1, 42, 7, seq);
    const bool b = Sampled(0.1, 43, 7, seq);
    kept_other_seed += b;
    same += a && b;
  }
  EXPECT_GE(kept, 8000);
  EXPECT_LE(kept, 12000);
  EXPECT_EQ(kept_again, kept);  // the same seed keeps the same ops
  EXPECT_GE(kept_other_seed, 8000);
  EXPECT_LE(kept_other_seed, 12000);
  EXPECT_LT(same, 2000);  // another seed keeps other ops (about 1% overlap)
  EXPECT_TRUE(Sampled(1, 42, 7, 3));
}

TEST(OpLogFilterTest, KindOperationRankAndSize) {
  OpLogFilter f;
  std::string error;
  EXPECT_TRUE(PassesFilter(f, Gemm(), -1));
  ASSERT_TRUE(ParseKinds("collective", &f.kinds, &error)) << error;
  EXPECT_FALSE(PassesFilter(f, Gemm(), 0));
  EXPECT_TRUE(PassesFilter(f, AllReduce(1 << 20), 0));
  f.kinds = 0;
  ASSERT_TRUE(ParseOps("GemmEx,AllGather", &f.ops, &error)) << error;
  EXPECT_TRUE(PassesFilter(f, Gemm(), 0));
  EXPECT_FALSE(PassesFilter(f, AllReduce(1 << 20), 0));
  f.ops.clear();
  ASSERT_TRUE(ParseRanks("0,4-6", &f.ranks, &error)) << error;
  EXPECT_EQ(f.ranks, (std::set<int>{0, 4, 5, 6}));
  EXPECT_TRUE(PassesFilter(f, Gemm(), 5));
  EXPECT_FALSE(PassesFilter(f, Gemm(), 3));
  EXPECT_FALSE(PassesFilter(f, Gemm(), -1));
  f.ranks.clear();
  f.min_bytes = 1 << 20;
  f.max_bytes = 1 << 24;
  EXPECT_FALSE(PassesFilter(f, AllReduce(1000), 0));
  EXPECT_TRUE(PassesFilter(f, AllReduce(1 << 20), 0));
  EXPECT_FALSE(PassesFilter(f, AllReduce(1 << 25), 0));
  EXPECT_TRUE(PassesFilter(f, Gemm(), 0));  // moves no bytes: the size filter does not apply
}

TEST(OpLogFilterTest, ErrorsNameTheItemAndTheFix) {
  std::string error;
  uint32_t kinds;
  std::set<uint16_t> ops;
  std::set<int> ranks;
  double rate;
  EXPECT_FALSE(ParseKinds("matmul,gemm", &kinds, &error));
  EXPECT_NE(error.find("unknown kind 'gemm': use matmul, collective"), std::string::npos);
  EXPECT_FALSE(ParseOps("AllReduce,allreduce", &ops, &error));
  EXPECT_NE(error.find("unknown operation 'allreduce'"), std::string::npos);
  EXPECT_FALSE(ParseRanks("3-1", &ranks, &error));
  EXPECT_NE(error.find("bad rank '3-1': use numbers and ranges"), std::string::npos);
  EXPECT_FALSE(ParseRate("0", &rate, &error));
  EXPECT_NE(error.find("use a number in (0, 1]"), std::string::npos);
  EXPECT_FALSE(ParseRate("1.5", &rate, &error));
  EXPECT_TRUE(ParseRate("0.25", &rate, &error));
  EXPECT_EQ(rate, 0.25);
}

int Columns(const std::string& line) {
  int n = 1;
  for (char c : line) n += c == ',';
  return n;
}

TEST(OpLogLineTest, CsvAndJsonCarryTheSameValues) {
  const format::OpRecord ar = AllReduce(1 << 26);
  OpLogLine line;
  line.record = &ar;
  line.rank = 3;
  std::string csv, json;
  AppendOpLogLine(OpLogFormat::kCsv, false, line, &csv);
  AppendOpLogLine(OpLogFormat::kJsonl, false, line, &json);
  const std::string header = OpLogHeader(OpLogFormat::kCsv, false);
  EXPECT_EQ(header.compare(0, 22, "start_ns,rank,device,k"), 0) << header;
  EXPECT_EQ(Columns(header), Columns(csv));
  EXPECT_EQ(OpLogHeader(OpLogFormat::kJsonl, false), "");
  // Bus bandwidth is opmath's bus bytes over the duration, as the metrics have it.
  char busbw[32];
  snprintf(busbw, sizeof busbw, "%.6g", BusBytesOf(ar) / 2e-3);
  EXPECT_EQ(csv, "1700000000123456789,3,0,collective,AllReduce,0x00000000000000ab,41,8,67108864,"
                 "0,0,0,1,bf16,2000000," + std::string(busbw) + ",0\n");
  EXPECT_EQ(json, "{\"start_ns\":1700000000123456789,\"rank\":3,\"device\":0,"
                  "\"kind\":\"collective\",\"op\":\"AllReduce\",\"comm\":\"0x00000000000000ab\","
                  "\"seq\":41,\"comm_size\":8,\"bytes\":67108864,\"m\":0,\"n\":0,\"k\":0,"
                  "\"batch\":1,\"dtype\":\"bf16\",\"duration_ns\":2000000,"
                  "\"bus_bytes_per_second\":" + std::string(busbw) + ",\"flop_per_second\":0}\n");
}

TEST(OpLogLineTest, MatmulFlopsAndAnomalyColumns) {
  const format::OpRecord g = Gemm();
  OpLogLine line;
  line.record = &g;
  line.rank = 0;
  line.judged_ns = 1000000;
  line.median_ns = 200000;
  line.samples = 63;
  std::string csv, json;
  AppendOpLogLine(OpLogFormat::kCsv, true, line, &csv);
  AppendOpLogLine(OpLogFormat::kJsonl, true, line, &json);
  EXPECT_EQ(Columns(OpLogHeader(OpLogFormat::kCsv, true)), Columns(csv));
  char flops[32];
  snprintf(flops, sizeof flops, "%.6g", FlopOf(g) / 1e-3);
  EXPECT_NE(csv.find(",0," + std::string(flops) + ",1000000,200000,5,63\n"), std::string::npos) << csv;
  EXPECT_NE(json.find("\"comm\":\"\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"judged_ns\":1000000,\"median_ns\":200000,\"ratio\":5,\"samples\":63}"),
            std::string::npos);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

// The inputs of `xtimer analyze`: dumps read from timeline files and hang summaries, and the
// daemons' HangCheck answers, analysed end to end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "analysis/analysis.h"
#include "cli/readers/dump_reader.h"
#include "cli/readers/rank_progress.h"
#include "cli/readers/test_job.h"
#include "format/record.h"

namespace xtimer {
namespace cli {
namespace {

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

DumpInput ReadDirs(const std::vector<std::string>& dirs) {
  DumpReadOptions opt;
  opt.inputs = dirs;
  opt.jobs = 2;
  DumpInput in;
  std::string error;
  EXPECT_TRUE(ReadDump(opt, &in, &error)) << error;
  return in;
}

// A rank whose host keeps its GPU idle 1 ms before every GEMM, inside an NVTX range its file
// carries, on the node whose clock runs 3 ms ahead: the range is brought onto the aligned clock
// with the arrivals, and the verdict names it.
TEST(DumpReader, HostStragglerNamesItsNvtxRange) {
  TestJob job;
  job.host_rank = 5;
  job.host_range = "load_batch";
  job.node_skew_ns = {0, 3000000};
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("host"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  DumpInput in = ReadDirs(dirs);
  ASSERT_EQ(in.ranks.size(), 8u);
  ASSERT_EQ(in.ranks[5].host_spans.size(), 20u);
  EXPECT_EQ(in.ranks[5].host_spans[0].name, "load_batch");
  EXPECT_TRUE(in.ranks[4].host_spans.empty());
  analysis::Options o;
  o.now_ns = in.now_ns;
  const analysis::Report r = analysis::Analyze(in.ranks, o);
  ASSERT_FALSE(r.stragglers.empty());
  const analysis::Straggler& s = r.stragglers[0];
  EXPECT_EQ(s.rank, 5);
  EXPECT_EQ(s.cause, analysis::Cause::kHost);
  ASSERT_EQ(s.host.size(), 1u);
  EXPECT_EQ(s.host[0].kind, "nvtx_range");
  EXPECT_EQ(s.host[0].text, "NVTX range 'load_batch'");
  // 1 ms of each step's gap, over the 19 steps after the first (the first has no gap before it).
  EXPECT_NEAR(s.host[0].seconds, 0.019, 0.0005);
  EXPECT_NEAR(s.host_idle_s, 19 * 0.00105, 0.0005);  // the gap and the 50 us between steps
  // Without the ranges the verdict is the same, naming nothing.
  job.host_range.clear();
  dirs = WriteTestJob(job, TempDir("host-bare"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  in = ReadDirs(dirs);
  const analysis::Report bare = analysis::Analyze(in.ranks, o);
  ASSERT_FALSE(bare.stragglers.empty());
  EXPECT_EQ(bare.stragglers[0].rank, 5);
  EXPECT_TRUE(bare.stragglers[0].host.empty());
}

TEST(DumpReader, HangDumpNamesTheRankThatNeverIssued) {
  TestJob job;
  job.stop_rank = 5;
  job.stop_step = 15;
  job.node_skew_ns = {0, 3000000};  // node1's clock runs 3 ms ahead
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("hang"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  DumpInput in = ReadDirs(dirs);
  EXPECT_EQ(in.files, 8);
  EXPECT_EQ(in.summaries, 2);
  EXPECT_EQ(in.world, 8);
  EXPECT_FALSE(in.partial());
  ASSERT_EQ(in.ranks.size(), 8u);
  ASSERT_EQ(in.offsets.size(), 2u);
  EXPECT_EQ(in.offsets[1].second - in.offsets[0].second, -3000000)
      << "node1 is brought back by its 3 ms";
  // Every rank completed 15 AllReduces; the waiting ones have the 16th in flight.
  for (const analysis::RankInput& r : in.ranks) {
    EXPECT_EQ(r.arrivals.size(), 15u) << r.rank;
    ASSERT_EQ(r.progress.size(), 1u) << r.rank;
    EXPECT_EQ(r.progress[0].has_inflight, r.rank != 5) << r.rank;
    EXPECT_FALSE(r.last_activity.empty());
  }
  // Aligned: rank 0 (node0) and rank 4 (node1) end each AllReduce at the same time.
  EXPECT_EQ(in.ranks[0].arrivals[3].end_ns, in.ranks[4].arrivals[3].end_ns);
  analysis::Options opt;
  opt.now_ns = in.now_ns;
  analysis::Report report = analysis::Analyze(in.ranks, opt);
  ASSERT_FALSE(report.hangs.empty());
  const analysis::HangVerdict& v = report.hangs[0];
  EXPECT_EQ(std::string(analysis::HangKindName(v.kind)), "never_issued");
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({5}));
  EXPECT_EQ(v.waiting_ranks.size(), 7u);
  EXPECT_EQ(v.comm_id, kTestWorldComm);
  EXPECT_EQ(v.seq, 15u);
}

// Summaries written before the enums on the wire spelled an unset exit cause and mismatch as ""
// (docs/metrics.md "Changes"): they are still read, with every verdict of the new ones.
TEST(DumpReader, SummariesWithTheEarlierEmptyTextFieldsAreRead) {
  TestJob job;
  job.stop_rank = 5;
  job.stop_step = 15;
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("old-summary"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  for (int n = 0; n < 2; ++n) {
    const std::string path = dirs[n] + "/hang-summary-node" + std::to_string(n) + ".json";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    int replaced = 0;
    for (size_t at = 0; (at = text.find("\"job\": ", at)) != std::string::npos; ++replaced) {
      const std::string old_fields = "\"exit_cause\": \"\", \"mismatch\": \"\", ";
      text.insert(at, old_fields);
      at += old_fields.size() + 1;
    }
    ASSERT_GT(replaced, 0) << text;
    std::ofstream(path, std::ios::trunc) << text;
  }
  DumpInput in = ReadDirs(dirs);
  EXPECT_EQ(in.summaries, 2);
  EXPECT_FALSE(in.partial());
  for (const std::string& p : in.problems) ADD_FAILURE() << p;
  analysis::Options opt;
  opt.now_ns = in.now_ns;
  analysis::Report report = analysis::Analyze(in.ranks, opt);
  ASSERT_FALSE(report.hangs.empty());
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({5}));
}

// Two daemons sharing a dump root write both nodes' files and summaries into one folder.
TEST(DumpReader, OneFolderWithTwoNodesSummaries) {
  TestJob job;
  job.stop_rank = 6;
  job.stop_step = 9;
  job.node_skew_ns = {0, -4000000};
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("shared-root"), &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  for (const std::string& name : {std::string("hang-summary-node1.json"),
                                  std::string("00004-00008.timeline"),
                                  std::string("00005-00008.timeline"),
                                  std::string("00006-00008.timeline"),
                                  std::string("00007-00008.timeline")}) {
    ASSERT_EQ(std::rename((dirs[1] + "/" + name).c_str(), (dirs[0] + "/" + name).c_str()), 0)
        << name;
  }
  EXPECT_EQ(HangSummariesIn(dirs[0]),
            std::vector<std::string>({dirs[0] + "/hang-summary-node0.json",
                                      dirs[0] + "/hang-summary-node1.json"}));
  DumpInput in = ReadDirs({dirs[0]});
  EXPECT_EQ(in.files, 8);
  EXPECT_EQ(in.summaries, 2);
  EXPECT_FALSE(in.partial());
  analysis::Options opt;
  opt.now_ns = in.now_ns;
  analysis::Report report = analysis::Analyze(in.ranks, opt);
  ASSERT_FALSE(report.hangs.empty());
  EXPECT_EQ(std::string(analysis::HangKindName(report.hangs[0].kind)), "never_issued");
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({6}));
  EXPECT_EQ(report.hangs[0].waiting_ranks.size(), 7u);
}

TEST(DumpReader, StragglerJobBlamesTheSlowRanksCompute) {
  TestJob job;
  job.steps = 40;
  job.slow_rank = 3;
  job.node_skew_ns = {0, -2000000};
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("straggler"), &error);
  ASSERT_FALSE(dirs.empty()) << error;
  DumpInput in = ReadDirs(dirs);
  EXPECT_EQ(in.summaries, 0);
  analysis::Options opt;
  opt.now_ns = in.now_ns;
  analysis::Report report = analysis::Analyze(in.ranks, opt);
  EXPECT_TRUE(report.hangs.empty());
  ASSERT_FALSE(report.stragglers.empty());
  EXPECT_EQ(report.stragglers[0].rank, 3);
  EXPECT_EQ(std::string(analysis::CauseName(report.stragglers[0].cause)), "compute");
  // True bus bandwidth: 64 MiB AllReduce over 8 ranks in the 1 ms transfer.
  const double want = 2.0 * 7 / 8 * (64 << 20) / 1e-3;  // bytes per second
  for (const analysis::BusBandwidth& b : report.bus_bandwidth) {
    EXPECT_NEAR(b.true_bytes_per_second(), want, want * 0.05) << "rank " << b.rank;
    if (b.rank != 3) {
      EXPECT_LT(b.observed_bytes_per_second(), b.true_bytes_per_second()) << "rank " << b.rank;
    }
  }
}

TEST(DumpReader, MissingNodeAndCorruptFileArePartial) {
  TestJob job;
  job.steps = 5;
  std::string error;
  auto dirs = WriteTestJob(job, TempDir("partial"), &error);
  ASSERT_FALSE(dirs.empty()) << error;
  std::ofstream(dirs[0] + "/00000-00008.timeline", std::ios::trunc) << "garbage";
  std::ofstream(dirs[0] + "/hang-summary.json") << "{not json";
  DumpInput in = ReadDirs({dirs[0], TempDir("partial/no-such-node")});
  EXPECT_TRUE(in.partial());
  EXPECT_EQ(in.ranks.size(), 3u);  // ranks 1-3
  EXPECT_EQ(in.missing, std::vector<int32_t>({0, 4, 5, 6, 7}));
  std::string all;
  for (const std::string& p : in.problems) all += p + "\n";
  EXPECT_NE(all.find("00000-00008.timeline"), std::string::npos) << all;
  EXPECT_NE(all.find("no-such-node: No such file or directory"), std::string::npos) << all;
  EXPECT_NE(all.find("hang-summary.json: not a HangCheck answer"), std::string::npos) << all;
}

TEST(DumpReader, NothingReadable) {
  DumpReadOptions opt;
  opt.inputs = {TempDir("nothing-here")};
  DumpInput in;
  std::string error;
  EXPECT_FALSE(ReadDump(opt, &in, &error));
  EXPECT_NE(error.find("nothing-here: No such file or directory"), std::string::npos) << error;
}

RankProgress Waiting(int rank, const std::string& node, uint64_t seq, double age) {
  RankProgress p;
  p.set_job("j");
  p.set_rank(rank);
  p.set_world_size(4);
  p.set_node(node);
  p.set_pid(100 + rank);
  CommProgress* c = p.add_comms();
  c->set_comm_id("0x0000000000000007");
  c->set_comm_rank(rank);
  c->set_comm_size(4);
  c->set_last_issued_seq(seq);
  c->set_last_completed_seq(seq - 1);
  c->set_oldest_inflight_age_s(age);
  c->set_hang_threshold_s(12);
  CollectiveArrival* a = c->mutable_inflight();
  a->set_comm_id("0x0000000000000007");
  a->set_seq(seq);
  a->set_op(OpCode::AllReduce);
  a->set_dtype(DTypeCode::bf16);
  a->set_state(CollectiveArrival::started);
  a->set_count(1024);
  a->set_comm_size(4);
  a->set_issue_age_s(age);
  return p;
}

TEST(RankProgress, CombinesNodesOnOneClock) {
  HangCheckResponse n0, n1;
  n0.set_node("n0");
  n0.set_now(1000.0);
  n1.set_node("n1");
  n1.set_now(1000.5);  // answered half a second later (or its clock is ahead)
  *n0.add_ranks() = Waiting(0, "n0", 57, 40);
  *n0.add_ranks() = Waiting(1, "n0", 57, 40);
  *n1.add_ranks() = Waiting(2, "n1", 57, 40);
  RankProgress idle = Waiting(3, "n1", 56, 0);
  idle.mutable_comms(0)->clear_inflight();
  idle.mutable_comms(0)->set_last_completed_seq(56);
  idle.set_last_activity("GemmEx m=8192 n=8192 k=8192 completed 41.0 s ago");
  idle.set_last_activity_age_s(41);
  *n1.add_ranks() = idle;
  LiveInput live;
  std::string error;
  ASSERT_TRUE(CombineHangChecks({n0, n1}, "", &live, &error)) << error;
  EXPECT_EQ(live.now_ns, 1000500000000);
  EXPECT_EQ(live.world, 4);
  EXPECT_TRUE(live.missing.empty());
  EXPECT_DOUBLE_EQ(live.threshold_s, 12);
  ASSERT_EQ(live.ranks.size(), 4u);
  // Ages are taken from the common now: the same age gives the same time on both nodes.
  EXPECT_EQ(live.ranks[0].progress[0].oldest_issue_ns, live.now_ns - 40000000000);
  EXPECT_EQ(live.ranks[2].progress[0].oldest_issue_ns, live.now_ns - 40000000000);
  const analysis::Arrival& in = live.ranks[2].progress[0].inflight;
  EXPECT_EQ(in.op, static_cast<uint16_t>(format::Operation::kAllReduce));
  EXPECT_EQ(in.dtype, static_cast<uint8_t>(format::DType::kBF16));
  EXPECT_EQ(in.state, analysis::OpState::kStarted);
  EXPECT_EQ(live.ranks[3].last_activity_ns, live.now_ns - 41000000000);
  EXPECT_EQ(live.ranks[3].comms.size(), 1u);

  analysis::Options opt;
  opt.now_ns = live.now_ns;
  opt.hang_timeout_ns = static_cast<int64_t>(live.threshold_s * 1e9);
  opt.min_hang_ns = opt.hang_timeout_ns;
  analysis::Report report = analysis::Analyze(live.ranks, opt);
  ASSERT_FALSE(report.hangs.empty());
  EXPECT_EQ(std::string(analysis::HangKindName(report.hangs[0].kind)), "never_issued");
  EXPECT_EQ(report.hangs[0].culprit_ranks, std::vector<int32_t>({3}));
}

// A healthy rank's recent collectives as HangCheck carries them (HangCheckRequest.arrivals): 200
// AllReduces of 64 MiB on communicator 7, one every 20 ms, the last ending 0.1 s before the
// node's `now`. Rank 3 arrives 4 ms after the others (4 ms more GPU work before each); every
// instance ends 1 ms after the last arrival.
RankProgress WithRecent(int rank, const std::string& node, double later_s) {
  RankProgress p = Waiting(rank, node, 201, 0);
  p.mutable_comms(0)->clear_inflight();
  p.mutable_comms(0)->set_oldest_inflight_age_s(0);
  p.mutable_comms(0)->set_last_completed_seq(200);
  for (int seq = 1; seq <= 200; ++seq) {
    const double end_age = 0.1 + 0.02 * (200 - seq) + later_s;
    CollectiveArrival* a = p.add_recent();
    a->set_comm_id("0x0000000000000007");
    a->set_seq(seq);
    a->set_op(OpCode::AllReduce);
    a->set_dtype(DTypeCode::bf16);
    a->set_state(CollectiveArrival::completed);
    a->set_count(32 << 20);
    a->set_bytes(64 << 20);
    a->set_comm_size(4);
    a->set_end_age_s(end_age);
    a->set_start_age_s(end_age + 0.001 + (rank == 3 ? 0 : 0.004));
    a->set_issue_age_s(end_age + 0.006);
    a->set_busy_before_s(rank == 3 ? 0.013 : 0.009);
    a->set_idle_before_s(0.001);
  }
  return p;
}

// Recent collectives make --hosts a full analysis. Node n1's answer is as of a pass 0.3 s after
// n0's: its ages are 0.3 s larger for the same instants, taken from its own `now`; the clocks
// are one (offsets 0, not the 0.3 s between the passes), and the straggler is named with its
// cause. Both daemons call their node "vm" (emulated nodes on one machine): each answer is still
// its own clock domain.
TEST(RankProgress, RecentCollectivesAlignNodesAndNameAStraggler) {
  HangCheckResponse n0, n1;
  n0.set_node("vm");
  n0.set_now(1000.0);
  n1.set_node("vm");
  n1.set_now(1000.3);
  *n0.add_ranks() = WithRecent(0, "n0", 0);
  *n0.add_ranks() = WithRecent(1, "n0", 0);
  *n1.add_ranks() = WithRecent(2, "n1", 0.3);
  *n1.add_ranks() = WithRecent(3, "n1", 0.3);
  LiveInput live;
  std::string error;
  ASSERT_TRUE(CombineHangChecks({n0, n1}, "", &live, &error)) << error;
  ASSERT_EQ(live.ranks.size(), 4u);
  ASSERT_EQ(live.ranks[0].arrivals.size(), 200u);
  ASSERT_EQ(live.offsets.size(), 2u);
  EXPECT_EQ(live.offsets[0].first, "vm#1");
  EXPECT_EQ(live.offsets[1].first, "vm#2");
  EXPECT_EQ(live.offsets[0].second, 0);
  EXPECT_LE(std::llabs(live.offsets[1].second), 1000) << live.offsets[1].second;
  for (size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(live.ranks[0].arrivals[i].end_ns, live.ranks[3].arrivals[i].end_ns) << i;
  }
  EXPECT_EQ(live.ranks[3].arrivals[0].busy_before_ns, 13000000);

  analysis::Options opt;
  opt.now_ns = live.now_ns;
  analysis::Report report = analysis::Analyze(live.ranks, opt);
  EXPECT_TRUE(report.hangs.empty());
  ASSERT_FALSE(report.stragglers.empty());
  EXPECT_EQ(report.stragglers[0].rank, 3);
  EXPECT_EQ(std::string(analysis::CauseName(report.stragglers[0].cause)), "compute");
  ASSERT_FALSE(report.bus_bandwidth.empty());
  const double want = 2.0 * 3 / 4 * (64 << 20) / 1e-3;  // bus bytes over the 1 ms transfer
  EXPECT_NEAR(report.bus_bandwidth[0].true_bytes_per_second(), want, 0.01 * want);
}

// Like WithRecent, one AllReduce every 100 ms, but rank 3's GPU idles 50 ms longer before each
// (the same GPU work): its host is in the data loader for 60 ms of each window (from 20 ms after
// the previous collective's end), as the daemon's live diagnosis ships a host straggler's spans.
RankProgress WithHostGap(int rank, const std::string& node, double later_s) {
  RankProgress p = WithRecent(rank, node, later_s);
  for (int i = 0; i < p.recent_size(); ++i) {
    CollectiveArrival* a = p.mutable_recent(i);
    const double end_age = 0.1 + 0.1 * (200 - a->seq()) + later_s;
    a->set_end_age_s(end_age);
    a->set_start_age_s(end_age + 0.001 + (rank == 3 ? 0 : 0.05));
    a->set_issue_age_s(end_age + 0.06);
    a->set_busy_before_s(0.009);
    a->set_idle_before_s(rank == 3 ? 0.09 : 0.04);
    if (a->seq() > 1) a->set_gap_begin_age_s(end_age + 0.1);
    if (rank != 3 || a->seq() == 1) continue;
    HostSpan* h = p.add_host_spans();
    h->set_name("m:Loader.__next__");
    h->set_domain("xtimer.python");
    h->set_category(3);  // format::PythonSpanKind::kData
    h->set_start_age_s(end_age + 0.08);
    h->set_end_age_s(end_age + 0.02);
  }
  return p;
}

// The host spans a daemon ships for a host straggler name what its host did in `xtimer analyze
// --hosts` too, on the aligned clocks (n1's answer is 0.3 s later); without them the verdict
// names nothing.
TEST(RankProgress, HostSpansNameTheHostStragglersDataLoader) {
  for (bool spans : {true, false}) {
    HangCheckResponse n0, n1;
    n0.set_now(1000.0);
    n1.set_now(1000.3);
    for (int r = 0; r < 4; ++r) {
      *(r < 2 ? n0 : n1).add_ranks() = WithHostGap(r, r < 2 ? "n0" : "n1", r < 2 ? 0 : 0.3);
    }
    if (!spans) n1.mutable_ranks(1)->clear_host_spans();
    LiveInput live;
    std::string error;
    ASSERT_TRUE(CombineHangChecks({n0, n1}, "", &live, &error)) << error;
    analysis::Options opt;
    opt.now_ns = live.now_ns;
    const analysis::Report report = analysis::Analyze(live.ranks, opt);
    ASSERT_FALSE(report.stragglers.empty());
    const analysis::Straggler& s = report.stragglers[0];
    EXPECT_EQ(s.rank, 3);
    EXPECT_EQ(std::string(analysis::CauseName(s.cause)), "host");
    if (!spans) {
      EXPECT_TRUE(s.host.empty());
      continue;
    }
    ASSERT_FALSE(s.host.empty());
    EXPECT_EQ(s.host[0].kind, "data_loading");
    EXPECT_EQ(s.host[0].text, "the data loader (m:Loader.__next__)");
    EXPECT_NEAR(s.host[0].seconds, 199 * 0.06, 0.02 * 199 * 0.06);  // seq 1 has no window
  }
}

TEST(RankProgress, SeveralJobsNeedAChoice) {
  HangCheckResponse n0;
  *n0.add_ranks() = Waiting(0, "n0", 5, 1);
  RankProgress other = Waiting(0, "n0", 5, 1);
  other.set_job("k");
  *n0.add_ranks() = other;
  LiveInput live;
  std::string error;
  EXPECT_FALSE(CombineHangChecks({n0}, "", &live, &error));
  EXPECT_NE(error.find("choose one with --job"), std::string::npos) << error;
  LiveInput only_k;
  ASSERT_TRUE(CombineHangChecks({n0}, "k", &only_k, &error)) << error;
  EXPECT_EQ(only_k.ranks.size(), 1u);
  EXPECT_EQ(only_k.missing, std::vector<int32_t>({1, 2, 3}));
}

// A --job no node runs fails listing the jobs (it analysed nothing, exit 0); a rank whose world
// size disagrees with most ranks' is left out and named, never sizing the world (it did: the
// largest world size reported was taken).
TEST(RankProgress, UnknownJobAndDisagreeingWorldSize) {
  HangCheckResponse n0;
  *n0.add_ranks() = Waiting(0, "n0", 5, 1);
  *n0.add_ranks() = Waiting(1, "n0", 5, 1);
  RankProgress corrupt = Waiting(2, "n0", 5, 1);
  corrupt.set_world_size(1 << 30);
  *n0.add_ranks() = corrupt;
  LiveInput live;
  std::string error;
  EXPECT_FALSE(CombineHangChecks({n0}, "jj", &live, &error));
  EXPECT_NE(error.find("--job 'jj' names none of the jobs the nodes run ('j')"),
            std::string::npos)
      << error;
  ASSERT_TRUE(CombineHangChecks({n0}, "", &live, &error)) << error;
  EXPECT_EQ(live.world, 4);
  EXPECT_EQ(live.ranks.size(), 2u);
  EXPECT_EQ(live.missing, std::vector<int32_t>({2, 3}));
  ASSERT_EQ(live.warnings.size(), 1u);
  EXPECT_NE(live.warnings[0].find("rank 2 has world size 1073741824, the job 4: left out"),
            std::string::npos)
      << live.warnings[0];
}

}  // namespace
}  // namespace cli
}  // namespace xtimer

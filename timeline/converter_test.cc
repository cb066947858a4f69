#include "timeline/converter.h"
#include "timeline/clock_align.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "format/record.h"
#include "gtest/gtest.h"
#include "timeline/trace_decoder.h"
#include "timeline/synthetic_job.h"
#include "timeline/timeline_io.h"
#include "opmath/nccl_tests_reference.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace timeline {
namespace {

std::string Tmp() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Rates (TFLOPS, GB/s) are the exact value rounded to 4 significant digits.
void ExpectRate(const std::string& got_text, double want) {
  double got = std::stod(got_text);
  EXPECT_NEAR(got, want, want * 5e-4) << got_text;
  char four[32];
  std::snprintf(four, sizeof(four), "%.4g", got);
  EXPECT_EQ(std::stod(four), got) << got_text << " has more than 4 significant digits";
}

class ConverterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SyntheticJob job;
    job.ranks = 8;
    job.nodes = 2;
    job.steps = 5;
    job.seed = 3;
    job.node_skew_ns = {0, kSkew};
    std::string error;
    dirs_ = new std::vector<std::string>(WriteSyntheticJob(job, Tmp() + "/conv", &error));
    ASSERT_EQ(dirs_->size(), 2u) << error;
  }
  static constexpr int64_t kSkew = 3217000;  // node1's clock runs 3.217 ms ahead
  static std::vector<std::string>* dirs_;
};
std::vector<std::string>* ConverterTest::dirs_ = nullptr;

TEST_F(ConverterTest, TracksSlicesNamesAndFlows) {
  ConvertOptions opt;
  opt.inputs = *dirs_;
  opt.output = Tmp() + "/conv.pftrace";
  opt.quiet = true;
  opt.jobs = 4;
  ConvertStats stats;
  std::string error;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, stderr)) << error;
  EXPECT_EQ(stats.ranks, 8);
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_TRUE(stats.warnings.empty()) << stats.warnings[0];
  std::string bytes = Slurp(opt.output);
  EXPECT_EQ(bytes.size(), stats.trace_bytes);
  DecodedTrace d = DecodeTrace(bytes);
  ASSERT_TRUE(d.errors.empty()) << d.errors[0];
  EXPECT_TRUE(d.primary_realtime);

  // 8 rank process tracks, named by rank and host; per-stream thread tracks.
  std::map<int, std::string> processes;
  std::map<int, std::vector<std::string>> threads;
  for (const auto& kv : d.tracks) {
    if (kv.second.has_process())
      processes[kv.second.process().pid()] = kv.second.process().process_name();
    if (kv.second.has_thread())
      threads[kv.second.thread().pid()].push_back(kv.second.thread().thread_name());
  }
  ASSERT_EQ(processes.size(), 8u);
  EXPECT_EQ(processes[1], "rank 0 (node0)");
  EXPECT_EQ(processes[8], "rank 7 (node1)");
  for (int pid = 1; pid <= 8; ++pid) {
    std::vector<std::string>& t = threads[pid];
    std::sort(t.begin(), t.end());
    ASSERT_EQ(t.size(), 5u) << pid;  // host, compute, comm, copy, steps guessed (5 AllReduces)
    // Streams are numbered by first use, never named by their handle (a host pointer): the
    // compute stream launches first, then the copy stream, then the collectives' stream.
    const std::string dev = "dev " + std::to_string((pid - 1) % 4);
    EXPECT_EQ(t[0], dev + " stream 1 (matmul, kernel)");
    EXPECT_EQ(t[1], dev + " stream 2 (memcpy)");
    EXPECT_EQ(t[2], dev + " stream 3 (collective)");
    EXPECT_EQ(t[3], "host (launches, syncs)");
    EXPECT_EQ(t[4], "steps (guessed)");
  }

  // Slices: every event of every file, with its duration; node0's at its own times, node1's
  // shifted by the estimated offset (-skew).
  std::multiset<std::tuple<int, std::string, int64_t>> want, got;
  std::multiset<std::tuple<int, std::string, int64_t, int64_t>> want0, got0;
  for (const std::string& dir : *dirs_) {
    for (int r = 0; r < 8; ++r) {
      std::string path = dir + "/" + TimelineFileName(r, 8, 0);
      Metadata m;
      ReadResult rr = ReadTimeline(path, [](const EventRecord&) {});
      if (!rr.ok) continue;
      ReadTimeline(path, [&](const EventRecord& e) {
        std::string name = e.name ? rr.metadata.strings[e.name]
                                  : format::OperationName(static_cast<format::Operation>(e.op));
        want.insert({r + 1, name, e.duration_ns});
        if (r < 4) want0.insert({r + 1, name, e.gpu_start_ns, e.duration_ns});
      });
    }
  }
  for (const DecodedSlice& s : d.slices) {
    if (s.category == "step") continue;  // the guessed steps (host_track_test)
    int pid = PidOfTrack(d, s.track);
    got.insert({pid, s.name, s.dur});
    if (pid <= 4) got0.insert({pid, s.name, s.ts, s.dur});
  }
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_TRUE(got0 == want0);
  EXPECT_EQ(stats.events, want.size());

  // Interned names.
  for (const char* n : {"GemmEx", "LtMatmul", "AllReduce", "AllGather", "MemcpyHtoD",
                        "StreamSynchronize", "vectorized_elementwise_kernel<float>"}) {
    EXPECT_EQ(d.names.count(n), 1u) << n;
  }

  // Args.
  bool saw_gemm = false, saw_ar = false;
  for (const DecodedSlice& s : d.slices) {
    if (s.name == "GemmEx" && s.args.count("shape") &&
        s.args.at("shape") == "m=4096 n=4096 k=4096 batch=1 NT") {
      saw_gemm = true;
      EXPECT_EQ(s.category, "matmul");
      EXPECT_EQ(s.args.at("dtype"), "bf16");
      ExpectRate(s.args.at("tflops"), 2.0 * 4096 * 4096 * 4096 / s.dur / 1e3);
    }
    if (s.name == "AllReduce") {
      saw_ar = true;
      // Each file knows its own node's members only; the converter merges them.
      EXPECT_EQ(s.args.at("comm"), "0xc0ffee0000000001 (8 ranks: 0 1 2 3 4 5 6 7)");
      EXPECT_EQ(s.args.at("bytes"), std::to_string(64u << 20));
      EXPECT_EQ(s.args.at("dtype"), "fp32");
      EXPECT_TRUE(s.args.count("seq"));
      ExpectRate(s.args.at("busbw_gbps"), (64 << 20) * 2.0 * 7 / 8 / s.dur);
    }
  }
  EXPECT_TRUE(saw_gemm);
  EXPECT_TRUE(saw_ar);

  // Flows: each collective (comm, seq) joins all its ranks; each launch joins its GPU slice.
  std::map<uint64_t, std::set<int>> coll;
  std::map<uint64_t, std::string> coll_name;
  std::map<uint64_t, int> terminating;
  for (const DecodedSlice& s : d.slices) {
    for (uint64_t f : s.flows) {
      EXPECT_TRUE(coll[f].insert(PidOfTrack(d, s.track)).second);
      coll_name[f] = s.name;
    }
    for (uint64_t f : s.terminating) ++terminating[f];
  }
  int allreduce = 0, allgather = 0;
  for (const auto& kv : coll) {
    if (coll_name[kv.first] == "AllReduce") {
      ++allreduce;
      EXPECT_EQ(kv.second.size(), 8u);
    } else {
      ++allgather;
      EXPECT_EQ(kv.second.size(), 2u);
    }
  }
  EXPECT_EQ(allreduce, 5);
  EXPECT_EQ(allgather, 5 * 4);
  std::map<uint64_t, int> launches;
  for (const DecodedSlice& s : d.instants) {
    ASSERT_EQ(s.flows.size(), 1u);
    ++launches[s.flows[0]];
    EXPECT_EQ(d.tracks.at(s.track).thread().thread_name(), "host (launches, syncs)");
  }
  EXPECT_EQ(launches.size(), terminating.size());
  for (const auto& kv : terminating) {
    EXPECT_EQ(kv.second, 1);
    EXPECT_EQ(launches[kv.first], 1);
  }
}

// Every compression level decodes (with zlib, not the converter's libdeflate) to the same trace;
// level 0 writes plain packets.
TEST_F(ConverterTest, CompressionKeepsTheTrace) {
  auto convert = [&](int level, ConvertStats* stats) {
    ConvertOptions opt;
    opt.inputs = *dirs_;
    opt.output = Tmp() + "/level" + std::to_string(level) + ".pftrace";
    opt.quiet = true;
    opt.compression_level = level;
    std::string error;
    EXPECT_TRUE(ConvertTimelines(opt, stats, &error, stderr)) << error;
    DecodedTrace d = DecodeTrace(Slurp(opt.output));
    EXPECT_TRUE(d.errors.empty()) << d.errors[0];
    return d;
  };
  auto same = [](const DecodedTrace& a, const DecodedTrace& b) {
    auto key = [](const DecodedSlice& s) {
      return std::make_tuple(s.track, s.ts, s.dur, s.name, s.category, s.args, s.flows,
                             s.terminating);
    };
    ASSERT_EQ(a.slices.size(), b.slices.size());
    for (size_t i = 0; i < a.slices.size(); ++i) EXPECT_EQ(key(a.slices[i]), key(b.slices[i]));
    ASSERT_EQ(a.instants.size(), b.instants.size());
    for (size_t i = 0; i < a.instants.size(); ++i)
      EXPECT_EQ(key(a.instants[i]), key(b.instants[i]));
    EXPECT_EQ(a.tracks.size(), b.tracks.size());
    EXPECT_EQ(a.names, b.names);
  };
  ConvertStats plain_stats, fast_stats, small_stats;
  DecodedTrace plain = convert(0, &plain_stats);
  DecodedTrace fast = convert(1, &fast_stats);
  DecodedTrace small = convert(12, &small_stats);
  EXPECT_EQ(plain.compressed_packets, 0);
  EXPECT_GE(fast.compressed_packets, 8);  // at least one per rank
  EXPECT_GT(plain.slices.size(), 0u);
  same(plain, fast);
  same(plain, small);
  EXPECT_LT(fast_stats.trace_bytes * 2, plain_stats.trace_bytes);
  EXPECT_LE(small_stats.trace_bytes, fast_stats.trace_bytes);
  ConvertStats bad;
  ConvertOptions opt;
  opt.inputs = *dirs_;
  opt.output = Tmp() + "/bad-level.pftrace";
  opt.compression_level = 13;
  std::string error;
  EXPECT_FALSE(ConvertTimelines(opt, &bad, &error, nullptr));
  EXPECT_NE(error.find("compression level 13"), std::string::npos) << error;
}

// Operations on one stream overlapping by timer noise (ns) end the previous slice where the next
// begins, silently; longer overlaps do the same and are counted; a slice inside another nests.
TEST(Converter, OverlapsOnOneStream) {
  std::string dir = Tmp() + "/overlap";
  mkdir(dir.c_str(), 0755);
  Metadata m;
  m.job = "overlap";
  m.host = m.node = "n0";
  m.pid = 7;
  m.rank = 0;
  m.world_size = 1;
  m.device = 0;
  m.clock_realtime_ns = 1700000000000000000;
  m.strings = {"", "k"};
  std::string error;
  auto w = TimelineWriter::Create(dir + "/" + TimelineFileName(0, 1, 7), m, &error);
  ASSERT_TRUE(w) << error;
  const int64_t t0 = m.clock_realtime_ns;
  // {begin, duration} in ns after t0, in completion order.
  const std::vector<std::pair<int64_t, int64_t>> ops = {
      {1000, 1000},   // A: ends where B begins, less 5 ns of noise
      {1995, 1000},   // B
      {5000, 3000},   // C: D begins 2 us before C ends
      {6000, 4000},   // D
      {13000, 1000},  // F: inside E (a kernel of a graph, say)
      {12000, 5000},  // E
  };
  for (const auto& op : ops) {
    EventRecord e{};
    e.kind = static_cast<uint8_t>(format::OpKind::kKernel);
    e.op = static_cast<uint16_t>(format::Operation::kKernelLaunch);
    e.name = 1;
    e.stream = 0x10;
    e.gpu_start_ns = t0 + op.first;
    e.duration_ns = op.second;
    e.peer = e.root = -1;
    // A's launch reads 500 ns after its GPU start (clock alignment error): the launch instant
    // goes to the start, so that its flow runs forward.
    if (op.first == 1000) e.cpu_launch_ns = t0 + 1500;
    if (op.first == 5000) e.cpu_launch_ns = t0 + 4000;
    ASSERT_TRUE(w->Append(e));
  }
  ASSERT_TRUE(w->Finish(&error)) << error;
  ConvertOptions opt;
  opt.inputs = {dir};
  opt.output = Tmp() + "/overlap.pftrace";
  opt.quiet = true;
  ConvertStats stats;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  ASSERT_EQ(stats.warnings.size(), 1u);
  EXPECT_NE(stats.warnings[0].find(": 1 slices started more than 1 us before"), std::string::npos)
      << stats.warnings[0];
  DecodedTrace d = DecodeTrace(Slurp(opt.output));
  ASSERT_TRUE(d.errors.empty()) << d.errors[0];
  std::map<int64_t, int64_t> dur;  // begin -> duration
  for (const DecodedSlice& s : d.slices) dur[s.ts - t0] = s.dur;
  EXPECT_EQ(dur, (std::map<int64_t, int64_t>{
                     {1000, 995}, {1995, 1000}, {5000, 1000}, {6000, 4000}, {12000, 5000},
                     {13000, 1000}}));
  std::vector<int64_t> launches;
  for (const DecodedSlice& s : d.instants) launches.push_back(s.ts - t0);
  std::sort(launches.begin(), launches.end());
  EXPECT_EQ(launches, (std::vector<int64_t>{1000, 4000}));
}

// A kernel's slice shows its short name (util/kernel_name.h) and keeps the full one in its
// `signature` argument; a name that is short already gets no such argument.
TEST(Converter, KernelSlicesShowShortNamesAndKeepTheSignature) {
  std::string dir = Tmp() + "/names";
  mkdir(dir.c_str(), 0755);
  Metadata m;
  m.job = "names";
  m.host = m.node = "n0";
  m.pid = 7;
  m.rank = 0;
  m.world_size = 1;
  m.clock_realtime_ns = 1700000000000000000;
  const std::string full =
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>)";
  m.strings = {"", full, "triton_poi_fused_add_0"};
  std::string error;
  auto w = TimelineWriter::Create(dir + "/" + TimelineFileName(0, 1, 7), m, &error);
  ASSERT_TRUE(w) << error;
  for (uint32_t i = 0; i < 4; ++i) {
    EventRecord e{};
    e.kind = static_cast<uint8_t>(format::OpKind::kKernel);
    e.op = static_cast<uint16_t>(format::Operation::kKernelLaunch);
    e.name = 1 + i % 2;
    e.stream = 0x10;
    e.gpu_start_ns = m.clock_realtime_ns + 1000 * (i + 1);
    e.duration_ns = 500;
    e.peer = e.root = -1;
    ASSERT_TRUE(w->Append(e));
  }
  ASSERT_TRUE(w->Finish(&error)) << error;
  ConvertOptions opt;
  opt.inputs = {dir};
  opt.output = Tmp() + "/names.pftrace";
  opt.quiet = true;
  ConvertStats stats;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  DecodedTrace d = DecodeTrace(Slurp(opt.output));
  ASSERT_TRUE(d.errors.empty()) << d.errors[0];
  ASSERT_EQ(d.slices.size(), 4u);
  for (const DecodedSlice& s : d.slices) {
    if (s.name == "vectorized_elementwise_kernel<4, ...>") {
      EXPECT_EQ(s.args.at("signature"), full);
    } else {
      EXPECT_EQ(s.name, "triton_poi_fused_add_0");
      EXPECT_EQ(s.args.count("signature"), 0u);
    }
  }
  EXPECT_EQ(d.names.count(full), 0u);
}

// Each file knows some members of a communicator; the slices name what all files know together,
// '?' for the rest; a file that disagrees on the size is reported.
TEST(Converter, MergesCommunicatorMembersOverFiles) {
  std::string dir = Tmp() + "/members";
  mkdir(dir.c_str(), 0755);
  const int64_t t0 = 1700000000000000000;
  // {global rank, communicator rank, size the file claims}
  const int files[][3] = {{0, 0, 4}, {5, 1, 4}, {9, 2, 3}};
  for (const auto& f : files) {
    Metadata m;
    m.job = "members";
    m.host = m.node = "n" + std::to_string(f[0]);
    m.pid = 100 + f[0];
    m.rank = f[0];
    m.world_size = 16;
    m.clock_realtime_ns = t0;
    CommInfo c;
    c.id = 0xabc;
    c.size = f[2];
    c.rank = f[1];
    c.global_rank = f[0];
    c.members.assign(f[2], -1);
    c.members[f[1]] = f[0];
    m.comms = {c};
    std::string error;
    auto w = TimelineWriter::Create(dir + "/" + TimelineFileName(f[0], 16, m.pid), m, &error);
    ASSERT_TRUE(w) << error;
    EventRecord e{};
    e.kind = static_cast<uint8_t>(format::OpKind::kCollective);
    e.op = static_cast<uint16_t>(format::Operation::kAllReduce);
    e.stream = 0x20;
    e.comm_id = 0xabc;
    e.seq = 1;
    e.gpu_start_ns = t0 + 1000;
    e.duration_ns = 5000;
    e.peer = e.root = -1;
    ASSERT_TRUE(w->Append(e));
    ASSERT_TRUE(w->Finish(&error)) << error;
  }
  ConvertOptions opt;
  opt.inputs = {dir};
  opt.output = Tmp() + "/members.pftrace";
  opt.quiet = true;
  ConvertStats stats;
  std::string error;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  ASSERT_EQ(stats.warnings.size(), 2u);
  EXPECT_NE(stats.warnings[0].find("13 of 16 ranks have no file (ranks 1 2 3 4 6 7 8 10 11 12 "
                                   "13 14 15)"),
            std::string::npos)
      << stats.warnings[0];
  EXPECT_NE(stats.warnings[1].find("communicator 0x0000000000000abc has 3 ranks here, 4 in an "
                                   "earlier file"),
            std::string::npos)
      << stats.warnings[1];
  DecodedTrace d = DecodeTrace(Slurp(opt.output));
  ASSERT_TRUE(d.errors.empty()) << d.errors[0];
  ASSERT_EQ(d.slices.size(), 3u);
  for (const DecodedSlice& sl : d.slices) EXPECT_EQ(sl.args.at("comm"), "0x0000000000000abc (4 ranks: 0 5 ? ?)");
}

// Missing ranks, files of different dumps, and a dump path that holds job folders.
TEST_F(ConverterTest, WarnsAboutMissingRanksAndMixedDumpsAndReadsDumpPaths) {
  auto convert = [](const std::vector<std::string>& inputs, ConvertStats* stats) {
    ConvertOptions opt;
    opt.inputs = inputs;
    opt.output = Tmp() + "/warn.pftrace";
    opt.quiet = true;
    std::string error;
    EXPECT_TRUE(ConvertTimelines(opt, stats, &error, nullptr)) << error;
  };
  ConvertStats half;
  convert({(*dirs_)[0]}, &half);
  ASSERT_EQ(half.warnings.size(), 1u);
  EXPECT_NE(half.warnings[0].find("4 of 8 ranks have no file (ranks 4 5 6 7)"), std::string::npos)
      << half.warnings[0];

  SyntheticJob later;
  later.steps = 1;
  later.start_ns += 60000000000;
  std::string error;
  auto other = WriteSyntheticJob(later, Tmp() + "/later", &error);
  ASSERT_EQ(other.size(), 2u) << error;
  ConvertStats mixed;
  convert({(*dirs_)[0], other[1]}, &mixed);
  ASSERT_EQ(mixed.warnings.size(), 1u);
  EXPECT_NE(mixed.warnings[0].find("the inputs come from 2 different dumps (job 'synthetic' "
                                   "dump_time 1767225600000000000 ns: 4 files; job 'synthetic' "
                                   "dump_time 1767225660000000000 ns: 4 files)"),
            std::string::npos)
      << mixed.warnings[0];

  // DUMP_PATH/JOB/*.timeline: pointed at DUMP_PATH, the converter reads every job folder.
  ConvertStats whole;
  convert({Tmp() + "/conv"}, &whole);
  EXPECT_EQ(whole.ranks, 8);
  EXPECT_TRUE(whole.warnings.empty()) << whole.warnings[0];
  ASSERT_EQ(whole.notes.size(), 1u);
  EXPECT_EQ(whole.notes[0], Tmp() + "/conv is a dump path holding job folders; reading 2 of them: "
                                    "node0, node1");
}

TEST_F(ConverterTest, ClockOffsetRecoversSkew) {
  ConvertOptions opt;
  opt.inputs = *dirs_;
  opt.output = Tmp() + "/skew.pftrace";
  opt.quiet = true;
  ConvertStats stats;
  std::string error;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  ASSERT_EQ(stats.offsets.size(), 2u);
  EXPECT_EQ(stats.offsets[0].first, "node0");
  EXPECT_EQ(stats.offsets[0].second, 0);
  EXPECT_EQ(stats.offsets[1].first, "node1");
  EXPECT_NEAR(stats.offsets[1].second, -kSkew, 1000);
  // Only the world AllReduces (5 steps, one entry per node) span both nodes; the tp pairs'
  // AllGathers are node-local and left out of alignment's index.
  EXPECT_EQ(stats.align_entries, 2u * 5u);
  opt.align_clocks = false;
  ConvertStats off;
  ASSERT_TRUE(ConvertTimelines(opt, &off, &error, nullptr)) << error;
  EXPECT_EQ(off.align_entries, 0u);
}

TEST(ClockOffsets, MedianOverSharedCollectivesAndChains) {
  // Three nodes: b shares with a, c shares only with b; outliers do not move the median.
  NodeEnds a{"a", {}}, b{"b", {}}, c{"c", {}};
  for (uint64_t s = 0; s < 11; ++s) {
    const int64_t t = 10 * static_cast<int64_t>(s);
    a.ends.push_back({{1, s}, 1000000 + t});
    b.ends.push_back({{1, s}, 1000000 + t + 5000 + (s == 3 ? 900000 : 0)});
    b.ends.push_back({{2, s}, 2000000 + t + 5000});
    c.ends.push_back({{2, s}, 2000000 + t - 7000});
  }
  std::sort(b.ends.begin(), b.ends.end());
  ClockAlignment al = AlignClocks({a, b, c});
  // b has the most collectives: it is the reference.
  EXPECT_EQ(al.reference_of, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(al.offset, (std::vector<int64_t>{5000, 0, 12000}));
  EXPECT_EQ(al.shared, (std::vector<size_t>{11, 0, 11}));
  NodeEnds lonely{"d", {{{9, 9}, 5}}};
  al = AlignClocks({a, lonely});
  EXPECT_EQ(al.reference_of[1], -1);
  EXPECT_EQ(al.offset[1], 0);
}

TEST(GroupLayout, ParsesInMegatronsOrder) {
  GroupLayout g;
  std::string error;
  ASSERT_TRUE(ParseGroupLayout("tp2-cp1-pp2-dp2", &g, &error)) << error;
  EXPECT_EQ(g.world(), 8);
  // rank = tp + 2 dp + 4 pp whatever the text's order, as xtimer analyze reads it.
  EXPECT_EQ(g.Label(5), "pp1 dp0 tp1");
  EXPECT_EQ(g.Label(2), "pp0 dp1 tp0");
  for (const char* bad : {"", "tp", "xx2", "tp0", "tp2-tp2", "tp2-", "tp2x"}) {
    EXPECT_FALSE(ParseGroupLayout(bad, &g, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST_F(ConverterTest, SkipsBadAndDuplicateInputs) {
  std::string dir = Tmp() + "/bad";
  mkdir(dir.c_str(), 0755);
  { std::ofstream(dir + "/garbage.timeline") << "not a timeline"; }
  // A duplicate of rank 0 (a copy of node0's file).
  std::string src = Slurp((*dirs_)[0] + "/" + TimelineFileName(0, 8, 0));
  std::ofstream(dir + "/00000-00008.timeline", std::ios::binary) << src;
  // A truncated copy of rank 1 keeps its header, loses events.
  std::string r1 = Slurp((*dirs_)[0] + "/" + TimelineFileName(1, 8, 0));
  ConvertOptions opt;
  opt.inputs = {(*dirs_)[0], (*dirs_)[1], dir, Tmp() + "/does-not-exist"};
  opt.output = Tmp() + "/bad.pftrace";
  opt.quiet = true;
  ConvertStats stats;
  std::string error;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  EXPECT_EQ(stats.ranks, 8);
  ASSERT_EQ(stats.skipped.size(), 3u);
  std::string all;
  for (const auto& s : stats.skipped) all += s + "\n";
  EXPECT_NE(all.find("does-not-exist: No such file"), std::string::npos) << all;
  EXPECT_NE(all.find("garbage.timeline: truncated file header"), std::string::npos) << all;
  EXPECT_NE(all.find("duplicate rank 0"), std::string::npos) << all;
}

TEST(Converter, GroupsMustMatchWorld) {
  SyntheticJob job;
  job.ranks = 4;
  job.nodes = 1;
  job.steps = 1;
  std::string error;
  auto dirs = WriteSyntheticJob(job, Tmp() + "/g4", &error);
  ConvertOptions opt;
  opt.inputs = dirs;
  opt.output = Tmp() + "/g4.pftrace";
  opt.groups = "tp2-dp4";
  opt.quiet = true;
  ConvertStats stats;
  EXPECT_FALSE(ConvertTimelines(opt, &stats, &error, nullptr));
  EXPECT_NE(error.find("describes 8 ranks, the files say world size 4"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer

namespace xtimer {
namespace timeline {
namespace {

// Writes one rank's file with `events` and communicator `comm` of `size` ranks (this file: comm
// rank `comm_rank`, global rank `rank`; members' global ranks = 10 + comm rank).
void WriteRank(const std::string& dir, int rank, int world, uint64_t comm, int size, int comm_rank,
               const std::vector<EventRecord>& events) {
  Metadata m;
  m.job = "unit";
  m.host = m.node = "n0";
  m.pid = 100 + rank;
  m.rank = rank;
  m.world_size = world;
  m.clock_realtime_ns = 1700000000000000000;
  CommInfo c;
  c.id = comm;
  c.size = size;
  c.rank = comm_rank;
  c.global_rank = rank;
  for (int i = 0; i < size; ++i) c.members.push_back(10 + i);
  m.comms = {c};
  std::string error;
  auto w = TimelineWriter::Create(dir + "/" + TimelineFileName(rank, world, m.pid), m, &error);
  ASSERT_TRUE(w) << error;
  for (const EventRecord& e : events) ASSERT_TRUE(w->Append(e));
  ASSERT_TRUE(w->Finish(&error)) << error;
}

EventRecord CommOp(format::Operation op, uint64_t comm, uint64_t seq, int64_t start, int64_t dur) {
  EventRecord e{};
  e.op = static_cast<uint16_t>(op);
  e.kind = format::KindOfOperation(e.op);
  e.stream = 0x30;
  e.comm_id = comm;
  e.seq = seq;
  e.gpu_start_ns = 1700000000000000000 + start;
  e.duration_ns = dur;
  e.peer = e.root = -1;
  return e;
}

DecodedTrace Convert(const std::string& dir, const std::string& name) {
  ConvertOptions opt;
  opt.inputs = {dir};
  opt.output = Tmp() + "/" + name + ".pftrace";
  opt.quiet = true;
  ConvertStats stats;
  std::string error;
  EXPECT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  DecodedTrace d = DecodeTrace(Slurp(opt.output));
  EXPECT_TRUE(d.errors.empty()) << d.errors[0];
  return d;
}

// Events as the hook records them (bytes: the send buffer, opmath::SendBytes) for every
// collective and dtype: the trace's busbw_gbps is nccl-tests' bus bandwidth, as the metrics'.
TEST(Converter, BusBandwidthOfEveryCollectiveAndDtypeIsNcclTests) {
  constexpr int kRanks = 8;
  constexpr uint64_t kCount = 12345;
  constexpr int64_t kDur = 100003;
  const uint64_t comm = 0x5eed;
  std::string dir = Tmp() + "/busbw";
  mkdir(dir.c_str(), 0755);
  std::vector<EventRecord> events;
  std::map<uint64_t, std::pair<const opmath::testing::NcclTestsCase*, int>> what;  // by seq
  uint64_t seq = 0;
  for (const auto& c : opmath::testing::NcclTestsCases()) {
    for (const auto& d : opmath::testing::DTypeCases()) {
      ++seq;
      EventRecord e = CommOp(c.op, comm, seq, static_cast<int64_t>(seq) * 200000, kDur);
      e.dtype = static_cast<uint8_t>(d.dtype);
      e.bytes = opmath::SendBytes(e.op, kCount, opmath::ElementSize(d.dtype), kRanks);
      if (e.kind == static_cast<uint8_t>(format::OpKind::kP2P)) e.peer = 1;
      events.push_back(e);
      what[seq] = {&c, d.size};
    }
  }
  WriteRank(dir, 0, kRanks, comm, kRanks, 0, events);
  DecodedTrace d = Convert(dir, "busbw");
  size_t checked = 0;
  for (const DecodedSlice& s : d.slices) {
    auto w = what.find(std::stoull(s.args.at("seq")));
    ASSERT_NE(w, what.end());
    const auto& c = *w->second.first;
    SCOPED_TRACE(std::string(c.name) + " size " + std::to_string(w->second.second));
    EXPECT_EQ(s.name, c.name);
    ExpectRate(s.args.at("busbw_gbps"),
               opmath::testing::ReferenceBusBytes(c, kCount, w->second.second, kRanks) / kDur);
    ++checked;
  }
  EXPECT_EQ(checked, what.size());
}

// Each send is linked to the matching receive (n-th send from A to B -> n-th receive at B from
// A), in the data's direction, and peers show as global ranks.
TEST(Converter, SendFlowsToItsReceive) {
  const uint64_t comm = 0xfeed;
  std::string dir = Tmp() + "/p2p";
  mkdir(dir.c_str(), 0755);
  auto p2p = [&](format::Operation op, int peer, uint64_t seq, int64_t start) {
    EventRecord e = CommOp(op, comm, seq, start, 5000);
    e.peer = peer;
    e.bytes = 1024;
    return e;
  };
  using O = format::Operation;
  // Rank 0 (comm rank 0) sends twice to 1 and receives once from 1; its per-peer seq counts
  // both directions. Rank 1 receives twice from 0 (the second receive begins before its send),
  // then sends once to 0.
  WriteRank(dir, 0, 2, comm, 2, 0,
            {p2p(O::kSend, 1, 1, 1000), p2p(O::kSend, 1, 2, 17000), p2p(O::kRecv, 1, 3, 40000)});
  WriteRank(dir, 1, 2, comm, 2, 1,
            {p2p(O::kRecv, 0, 1, 1500), p2p(O::kRecv, 0, 2, 15000), p2p(O::kSend, 0, 3, 39000)});
  DecodedTrace d = Convert(dir, "p2p");
  // The send's slice starts the flow; an instant at the receive's end ("Recv done", on the same
  // track) terminates it, so the flow runs from the send even where the receive began first.
  std::map<uint64_t, std::pair<const DecodedSlice*, const DecodedSlice*>> flows;  // send, done
  std::map<std::pair<uint64_t, int64_t>, const DecodedSlice*> recv_end;  // (track, end) -> Recv
  for (const DecodedSlice& s : d.slices) {
    EXPECT_EQ(s.args.at("peer"), s.args.at("peer_comm_rank") == "0" ? "10" : "11") << s.name;
    EXPECT_TRUE(s.terminating.empty()) << s.name;
    if (s.name == "Send") {
      ASSERT_EQ(s.flows.size(), 1u);
      flows[s.flows[0]].first = &s;
    } else {
      ASSERT_EQ(s.name, "Recv");
      EXPECT_TRUE(s.flows.empty());
      recv_end[{s.track, s.ts + s.dur}] = &s;
    }
  }
  ASSERT_EQ(d.instants.size(), 3u);
  for (const DecodedSlice& i : d.instants) {
    EXPECT_EQ(i.name, "Recv done");
    EXPECT_EQ(i.category, "p2p");
    EXPECT_EQ(recv_end.count({i.track, i.ts}), 1u) << "no receive ends at " << i.ts;
    ASSERT_EQ(i.terminating.size(), 1u);
    EXPECT_TRUE(i.flows.empty());
    flows[i.terminating[0]].second = &i;
  }
  ASSERT_EQ(flows.size(), 3u);
  std::set<std::pair<int64_t, int64_t>> pairs;  // (send start, receive end) after t0
  for (const auto& kv : flows) {
    ASSERT_TRUE(kv.second.first && kv.second.second);
    EXPECT_NE(PidOfTrack(d, kv.second.first->track), PidOfTrack(d, kv.second.second->track));
    EXPECT_LT(kv.second.first->ts, kv.second.second->ts);  // Perfetto draws it send -> receive
    pairs.insert({kv.second.first->ts - 1700000000000000000, kv.second.second->ts -
                                                                 1700000000000000000});
  }
  EXPECT_EQ(pairs, (std::set<std::pair<int64_t, int64_t>>{
                       {1000, 6500}, {17000, 20000}, {39000, 45000}}));
  // Without flows, no arrival instants either.
  ConvertOptions opt;
  opt.inputs = {dir};
  opt.output = Tmp() + "/p2p_noflows.pftrace";
  opt.quiet = true;
  opt.flows = false;
  ConvertStats stats;
  std::string error;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  EXPECT_TRUE(DecodeTrace(Slurp(opt.output)).instants.empty());
}

// Files of a dump can begin at different operations (the last N per rank): receives pair with
// sends by when they end, not by position in the files. A receive that reads as ending before
// its send began (timer noise) gets its arrival just after the send's start.
TEST(Converter, ReceivesPairWithSendsAcrossCutFiles) {
  const uint64_t comm = 0xbeef;
  std::string dir = Tmp() + "/p2p_cut";
  mkdir(dir.c_str(), 0755);
  auto p2p = [&](format::Operation op, int peer, uint64_t seq, int64_t start, int64_t dur) {
    EventRecord e = CommOp(op, comm, seq, start, dur);
    e.peer = peer;
    e.bytes = 1024;
    return e;
  };
  using O = format::Operation;
  // 0 -> 1: rank 0 holds all 4 sends, rank 1 only the last 2 receives (the 3rd posted first).
  // 1 -> 0: rank 1 holds only the last 2 of 3 sends, rank 0 all 3 receives; the last receive
  // ends 500 ns before its send begins.
  WriteRank(dir, 0, 2, comm, 2, 0,
            {p2p(O::kSend, 1, 1, 1000, 5000), p2p(O::kSend, 1, 2, 11000, 5000),
             p2p(O::kSend, 1, 3, 21000, 5000), p2p(O::kSend, 1, 4, 31000, 5000),
             p2p(O::kRecv, 1, 5, 30000, 2000), p2p(O::kRecv, 1, 6, 40000, 6500),
             p2p(O::kRecv, 1, 7, 47000, 3500)});
  WriteRank(dir, 1, 2, comm, 2, 1,
            {p2p(O::kRecv, 0, 3, 20000, 7000), p2p(O::kRecv, 0, 4, 30500, 6000),
             p2p(O::kSend, 0, 6, 41000, 5000), p2p(O::kSend, 0, 7, 51000, 5000)});
  DecodedTrace d = Convert(dir, "p2p_cut");
  std::map<uint64_t, int64_t> send_of;  // flow id -> send start after t0
  for (const DecodedSlice& s : d.slices) {
    if (s.name == "Send") {
      ASSERT_EQ(s.flows.size(), 1u);
      send_of[s.flows[0]] = s.ts - 1700000000000000000;
    }
  }
  EXPECT_EQ(send_of.size(), 6u);
  std::set<std::pair<int64_t, int64_t>> pairs;  // (send start, arrival) after t0
  for (const DecodedSlice& i : d.instants) {
    ASSERT_EQ(i.name, "Recv done");
    ASSERT_EQ(i.terminating.size(), 1u);
    ASSERT_EQ(send_of.count(i.terminating[0]), 1u) << "an arrival without its send";
    pairs.insert({send_of[i.terminating[0]], i.ts - 1700000000000000000});
  }
  // The receive at 30000 (its send is not in rank 1's file) has no arrival.
  EXPECT_EQ(pairs, (std::set<std::pair<int64_t, int64_t>>{
                       {21000, 27000}, {31000, 36500}, {41000, 46500}, {51000, 51001}}));
}

// A receive that ends more than 100 us before its send begins is not drawn as its arrival.
TEST(Converter, NoArrivalLongBeforeItsSend) {
  const uint64_t comm = 0xbee5;
  std::string dir = Tmp() + "/p2p_early";
  mkdir(dir.c_str(), 0755);
  auto p2p = [&](format::Operation op, int peer, int64_t start) {
    EventRecord e = CommOp(op, comm, 1, start, 20000);
    e.peer = peer;
    return e;
  };
  WriteRank(dir, 0, 2, comm, 2, 0, {p2p(format::Operation::kSend, 1, 200000)});
  WriteRank(dir, 1, 2, comm, 2, 1, {p2p(format::Operation::kRecv, 0, 0)});  // ends at 20000
  DecodedTrace d = Convert(dir, "p2p_early");
  EXPECT_TRUE(d.instants.empty());
  ASSERT_EQ(d.slices.size(), 2u);
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer

#include "timeline/host_links.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/record.h"
#include "gtest/gtest.h"
#include "timeline/converter.h"
#include "timeline/synthetic_job.h"
#include "timeline/trace_decoder.h"

namespace xtimer {
namespace timeline {
namespace {

using format::NvtxEvent;
using format::OpKind;

NvtxEntry Range(uint32_t tid, int64_t begin, int64_t end, int32_t depth) {
  NvtxEntry e{};
  e.event = static_cast<uint8_t>(NvtxEvent::kRange);
  e.tid = tid;
  e.start_ns = begin;
  e.end_ns = end;
  e.depth = depth;
  return e;
}

EventRecord Op(int64_t launch, OpKind kind = OpKind::kKernel) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(kind);
  e.cpu_launch_ns = launch;
  e.gpu_start_ns = launch + 50;
  e.duration_ns = 10;
  return e;
}

// Thread 7: outer [100, 1000) > inner [200, 300); thread 8: [600, 700).
Metadata TwoThreads() {
  Metadata m;
  m.nvtx = {Range(7, 100, 1000, 0), Range(7, 200, 300, 1), Range(8, 600, 700, 0)};
  return m;
}

TEST(HostLinksTest, InnermostRangeOfTheOnlyThreadWithOneOpen) {
  const std::vector<EventRecord> ops = {Op(250), Op(150), Op(300), Op(50), Op(1000)};
  const std::vector<HostLink> links = HostLinks(ops, TwoThreads());
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].event, 0u);  // 250: in inner
  EXPECT_EQ(links[0].entry, 1u);
  EXPECT_EQ(links[1].event, 1u);  // 150: in outer only
  EXPECT_EQ(links[1].entry, 0u);
  EXPECT_EQ(links[2].event, 2u);  // 300: inner has ended, outer holds it
  EXPECT_EQ(links[2].entry, 0u);  // 50 and 1000: outside every range
}

TEST(HostLinksTest, TwoThreadsWithRangesOpenIsAmbiguous) {
  const std::vector<HostLink> links = HostLinks({Op(650), Op(750)}, TwoThreads());
  ASSERT_EQ(links.size(), 1u);  // 650: threads 7 and 8 both in a range
  EXPECT_EQ(links[0].event, 1u);
  EXPECT_EQ(links[0].entry, 0u);
}

TEST(HostLinksTest, OnlyGpuOpsWithALaunchTimeInPushPopRanges) {
  Metadata m = TwoThreads();
  NvtxEntry start{};  // a start/end range on thread 9 does not make thread 7's ambiguous
  start.event = static_cast<uint8_t>(NvtxEvent::kStart);
  start.tid = 9;
  start.start_ns = 0;
  m.nvtx.push_back(start);
  EventRecord early = Op(400);
  early.gpu_start_ns = 90;  // launch read after the GPU start: the GPU start counts, outside
  std::vector<HostLink> links =
      HostLinks({Op(400, OpKind::kHostSync), Op(0), early, Op(400)}, m);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].event, 3u);
  EXPECT_TRUE(HostLinks({Op(400)}, Metadata()).empty());
}

std::string Tmp() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

DecodedTrace ConvertJob(bool launches, bool nvtx = true, int steps = 4) {
  SyntheticJob job;
  job.ranks = 4;
  job.nodes = 2;
  job.steps = steps;
  job.nvtx = nvtx;
  job.node_skew_ns = {0, 1000000};
  std::string error;
  const std::string root =
      Tmp() + "/job" + std::to_string(launches) + std::to_string(nvtx) + std::to_string(steps);
  std::vector<std::string> dirs = WriteSyntheticJob(job, root, &error);
  EXPECT_EQ(dirs.size(), 2u) << error;
  ConvertOptions opt;
  opt.inputs = dirs;
  opt.output = root + ".pftrace";
  opt.quiet = true;
  opt.launches = launches;
  ConvertStats stats;
  EXPECT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  std::ifstream in(opt.output, std::ios::binary);
  DecodedTrace d =
      DecodeTrace(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  EXPECT_TRUE(d.errors.empty()) << d.errors[0];
  return d;
}

// Each rank's steps track holds "step N" from one train_step's start (the marked range) to the
// next one's, on the aligned clock of its other slices.
TEST(StepsTrackTest, MarkedStepsFromStartToNextStart) {
  const DecodedTrace d = ConvertJob(true);
  std::map<int, std::vector<int64_t>> step_starts;  // pid -> train_step starts
  std::map<int, std::vector<DecodedSlice>> steps;   // pid -> steps slices
  for (const DecodedSlice& s : d.slices) {
    const int pid = PidOfTrack(d, s.track);
    if (s.name == "train_step") step_starts[pid].push_back(s.ts);
    if (s.category == "step") steps[pid].push_back(s);
  }
  ASSERT_EQ(step_starts.size(), 4u);
  ASSERT_EQ(steps.size(), 4u);
  for (auto& [pid, starts] : step_starts) {
    ASSERT_EQ(starts.size(), 4u);
    std::sort(starts.begin(), starts.end());
    const std::vector<DecodedSlice>& mine = steps[pid];
    ASSERT_EQ(mine.size(), 3u) << "pid " << pid;
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].name, "step " + std::to_string(i + 1));
      EXPECT_EQ(mine[i].ts, starts[i]);
      EXPECT_EQ(mine[i].dur, starts[i + 1] - starts[i]);
      EXPECT_EQ(d.tracks.at(mine[i].track).thread().thread_name(), "steps");
    }
  }
}

// Without marks, the steps guessed from the recurring collectives, labelled as guessed: each
// from a collective's start on one communicator to the start of the one a step later.
TEST(StepsTrackTest, GuessedFromTheCollectivesWhereNoneIsMarked) {
  const DecodedTrace d = ConvertJob(true, false, 6);
  std::map<int, std::set<int64_t>> collective_starts;  // pid -> starts of its collectives
  std::map<int, std::vector<DecodedSlice>> steps;
  for (const DecodedSlice& s : d.slices) {
    const int pid = PidOfTrack(d, s.track);
    if (s.category == "collective") collective_starts[pid].insert(s.ts);
    if (s.category == "step") steps[pid].push_back(s);
  }
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& [pid, mine] : steps) {
    ASSERT_EQ(mine.size(), 5u) << "pid " << pid;  // 6 steps' collectives: 5 intervals
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].name, "step " + std::to_string(i + 1) + " (guessed)");
      EXPECT_EQ(d.tracks.at(mine[i].track).thread().thread_name(), "steps (guessed)");
      EXPECT_EQ(mine[i].args.at("source").rfind("guessed: every 1 collectives on comm 0x", 0),
                0u) << mine[i].args.at("source");
      EXPECT_EQ(collective_starts[pid].count(mine[i].ts), 1u);
      EXPECT_EQ(collective_starts[pid].count(mine[i].ts + mine[i].dur), 1u);
    }
  }
  // Three steps' collectives are too few to guess from (analysis/steps.h kMinStepPeriods).
  for (const DecodedSlice& s : ConvertJob(true, false, 3).slices) EXPECT_NE(s.category, "step");
}

// A flow from the NVTX range an op was launched in to the op's slice, in the same process: the
// AllGathers and kernels from forward, the AllReduces from train_step (their launch is after
// forward's end and before all_reduce_wait's start), never from the loader's start/end ranges.
TEST(StepsTrackTest, FlowsFromTheLaunchingRangeToTheGpuSlice) {
  const DecodedTrace d = ConvertJob(true);
  std::map<uint64_t, const DecodedSlice*> from;  // flow id -> NVTX slice
  for (const DecodedSlice& s : d.slices) {
    if (s.category != "nvtx") continue;
    for (uint64_t id : s.flows) from[id] = &s;
  }
  std::map<std::string, std::set<std::string>> sources;  // GPU op -> NVTX names
  std::map<std::string, int> linked;
  for (const DecodedSlice& s : d.slices) {
    for (uint64_t id : s.terminating) {
      auto f = from.find(id);
      if (f == from.end()) continue;
      EXPECT_EQ(PidOfTrack(d, f->second->track), PidOfTrack(d, s.track));
      EXPECT_LE(f->second->ts, s.ts);
      sources[s.name].insert(f->second->name);
      ++linked[s.name];
    }
  }
  EXPECT_EQ(sources["AllGather"], std::set<std::string>{"forward"});
  EXPECT_EQ(sources["AllReduce"], std::set<std::string>{"train_step"});
  EXPECT_EQ(linked["AllGather"], 16);  // 4 ranks x 4 steps
  EXPECT_EQ(linked["AllReduce"], 16);
  int kernels = 0;  // slices named by the kernel (vectorized_elementwise_kernel, reduce_kernel)
  for (const auto& [name, n] : linked) {
    if (name.find("_kernel") == std::string::npos) continue;
    kernels += n;
    EXPECT_EQ(sources[name], std::set<std::string>{"forward"}) << name;
  }
  EXPECT_EQ(kernels, 16);
  EXPECT_EQ(sources.count("data_loader"), 0u);
  // --no-launches leaves them out with the launch flows.
  for (const DecodedSlice& s : ConvertJob(false).slices) {
    if (s.category == "nvtx") EXPECT_TRUE(s.flows.empty()) << s.name;
  }
}

// One range that launches many ops (a Python step or an NVTX forward range launches hundreds of
// kernels): the range's slice carries one flow per op, each ending on its op's GPU slice (a
// slice's flows once had room for 6: the converter wrote past its buffer and crashed).
TEST(StepsTrackTest, ARangeLaunchingManyOpsFlowsToEach) {
  constexpr int kOps = 200;
  const std::string root = Tmp() + "/many_ops";
  mkdir(root.c_str(), 0755);
  Metadata m = SyntheticRankMetadata("many", 0, 1, 1, 0x1234);
  const int64_t t0 = 1767225600000000000;
  m.strings = {"", "a_kernel", "forward"};
  NvtxEntry r = Range(7, t0, t0 + 10000000, 0);
  r.name = 2;
  m.nvtx = {r};
  m.dump_time_ns = m.window_begin_ns = t0;
  m.window_end_ns = m.clock_realtime_ns = t0 + 20000000;
  std::string error;
  auto w = TimelineWriter::Create(root + "/" + TimelineFileName(0, 1, m.pid), m, &error);
  ASSERT_TRUE(w) << error;
  for (int i = 0; i < kOps; ++i) {
    EventRecord e = Op(t0 + 1000 + i * 40000);
    e.op = static_cast<uint16_t>(format::Operation::kKernelLaunch);
    e.name = 1;
    e.stream = 0x7f0000001000ull;
    e.peer = e.root = -1;
    e.device = static_cast<int16_t>(m.device);
    w->Append(e);
  }
  ASSERT_TRUE(w->Finish(&error)) << error;
  ConvertOptions opt;
  opt.inputs = {root};
  opt.output = root + ".pftrace";
  opt.quiet = true;
  ConvertStats stats;
  ASSERT_TRUE(ConvertTimelines(opt, &stats, &error, nullptr)) << error;
  std::ifstream in(opt.output, std::ios::binary);
  const DecodedTrace d =
      DecodeTrace(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  ASSERT_TRUE(d.errors.empty()) << d.errors[0];
  std::set<uint64_t> from;
  for (const DecodedSlice& s : d.slices) {
    if (s.name == "forward") from.insert(s.flows.begin(), s.flows.end());
  }
  EXPECT_EQ(from.size(), static_cast<size_t>(kOps));
  int ended = 0;
  for (const DecodedSlice& s : d.slices) {
    if (s.name != "a_kernel") continue;
    for (uint64_t id : s.terminating) ended += static_cast<int>(from.count(id));
  }
  EXPECT_EQ(ended, kOps);
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer

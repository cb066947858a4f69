#include "stacktrace/merge.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "stacktrace/flamegraph_svg.h"
#include "stacktrace/summary.h"

namespace xtimer {
namespace stacktrace {
namespace {

// Frame table of every test rank: 0 ncclAllReduce, 1 _PyEval_EvalFrameDefault,
// 2 train_step (train.py:88), 3 main (train.py:120), 4 load_batch (data.py:42),
// 5 pthread_cond_wait.
StacksFile Rank(int32_t rank, int32_t world, std::vector<uint32_t> main_frames) {
  StacksFile f;
  f.job = "t";
  f.rank = rank;
  f.world_size = world;
  f.pid = 100 + rank;
  f.frames = {{Frame::kNative, "ncclAllReduce", "/usr/lib/libnccl.so.2", 0},
              {Frame::kNative, "_PyEval_EvalFrameDefault", "/usr/lib/libpython3.11.so", 0},
              {Frame::kPython, "train_step", "/job/train.py", 88},
              {Frame::kPython, "main", "/job/train.py", 120},
              {Frame::kPython, "load_batch", "/job/data.py", 42},
              {Frame::kNative, "pthread_cond_wait", "/lib/libc.so.6", 0}};
  f.threads = {{f.pid, "MainThread", std::move(main_frames), ""}};
  return f;
}

const std::vector<uint32_t> kInAllReduce = {0, 1, 2, 1, 3};
const std::vector<uint32_t> kInLoadBatch = {4, 1, 2, 1, 3};

// The node reached from the root by `labels` (thread first), or -1.
int Find(const StackTree& tree, const std::vector<std::string>& labels) {
  uint32_t node = 0;
  for (const std::string& l : labels) {
    int next = -1;
    for (uint32_t c : tree.nodes()[node].children) {
      if (FrameLabel(tree.frames()[tree.nodes()[c].frame]) == l) next = static_cast<int>(c);
    }
    if (next < 0) return -1;
    node = static_cast<uint32_t>(next);
  }
  return static_cast<int>(node);
}

TEST(MergeTest, WidthsAreRankCounts) {
  StackTree tree;
  for (int r = 0; r < 1024; ++r) {
    ASSERT_TRUE(tree.AddRank(Rank(r, 1024, r == 1000 ? kInLoadBatch : kInAllReduce)));
  }
  int thread = Find(tree, {"thread MainThread"});
  int step = Find(tree, {"thread MainThread", "main (train.py:120)", "_PyEval_EvalFrameDefault",
                         "train_step (train.py:88)", "_PyEval_EvalFrameDefault"});
  int nccl = Find(tree, {"thread MainThread", "main (train.py:120)", "_PyEval_EvalFrameDefault",
                         "train_step (train.py:88)", "_PyEval_EvalFrameDefault", "ncclAllReduce"});
  ASSERT_GE(nccl, 0);
  EXPECT_EQ(tree.Width(0), 1024);
  EXPECT_EQ(tree.Width(thread), 1024);
  EXPECT_EQ(tree.Width(step), 1024);
  EXPECT_EQ(tree.Width(nccl), 1023);
  EXPECT_EQ(tree.nodes()[tree.nodes()[nccl].parent].children.size(), 2u);
  EXPECT_EQ(RankRanges(tree.nodes()[nccl].ranks), "0-999,1001-1023");
  EXPECT_FALSE(tree.AddRank(Rank(5, 1024, kInAllReduce)));  // out of order: refused
}

TEST(MergeTest, FoldsRankRanges) {
  EXPECT_EQ(RankRanges({0, 1, 2, 4, 5, 6, 7}), "0-2,4-7");
  EXPECT_EQ(RankRanges({3}), "3");
  EXPECT_EQ(RankRanges({1, 3, 5, 6}), "1,3,5-6");
  EXPECT_EQ(RankRanges({}), "");
}

// Eight ranks: rank 3 loads a batch, rank 6 could not be sampled, rank 5 has two "worker"
// threads.
StackTree EightRanks() {
  StackTree tree;
  for (int r = 0; r < 8; ++r) {
    StacksFile f = Rank(r, 8, r == 3 ? kInLoadBatch : kInAllReduce);
    if (r == 6) f.threads[0] = {f.pid, "MainThread", {}, "signals blocked"};
    if (r == 5) {
      f.threads.push_back({f.pid + 2, "worker", {5}, ""});
      f.threads.push_back({f.pid + 1, "worker", {5, 3}, ""});
    }
    tree.AddRank(f);
  }
  return tree;
}

TEST(MergeTest, GroupsRanksBiggestFirst) {
  StackTree tree = EightRanks();
  std::vector<RankGroup> groups = tree.GroupRanks();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(RankRanges(groups[0].ranks), "0-2,4-5,7");
  // Named by the application's innermost frame, with what it is in after "via".
  EXPECT_EQ(TopFrames(tree, groups[0], 3),
            "train_step (train.py:88) <- main (train.py:120) via ncclAllReduce");
  EXPECT_EQ(RankCount(groups[1].ranks), "rank 3 (1)");
  EXPECT_EQ(TopFrames(tree, groups[1], 2), "load_batch (data.py:42) <- train_step (train.py:88)");
  EXPECT_EQ(TopFrames(tree, groups[2], 3), "no stack (signals blocked)");
  EXPECT_EQ(TopFrames(tree, groups[0], 1), "train_step (train.py:88) via ncclAllReduce");
  SummaryInput in;
  in.tree = &tree;
  in.world_size = 9;
  in.missing_ranks = {8};
  in.describe = [](const std::vector<int32_t>& r) { return "first " + std::to_string(r[0]); };
  EXPECT_EQ(SummaryText(in),
            "xtimer stacks: 8 ranks of a world of 9, 3 stacks (main thread of each rank)\n"
            "ranks 0-2,4-5,7 (6) in train_step (train.py:88) <- main (train.py:120) via "
            "ncclAllReduce\n"
            "rank 3 (1) in load_batch (data.py:42) <- train_step (train.py:88) <- main "
            "(train.py:120)   [outlier; first 3]\n"
            "rank 6 (1) in no stack (signals blocked)   [outlier; first 6]\n"
            "missing: rank 8 (1) have no readable stack file\n");
}

TEST(MergeTest, ThreadsOfOneNameAreNumbered) {
  StackTree tree = EightRanks();
  int first = Find(tree, {"thread worker", "main (train.py:120)", "pthread_cond_wait"});
  int second = Find(tree, {"thread worker #2", "pthread_cond_wait"});
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_EQ(tree.nodes()[first].self_ranks, (std::vector<int32_t>{5}));   // tid 106: lower
  EXPECT_EQ(tree.nodes()[second].self_ranks, (std::vector<int32_t>{5}));  // tid 107
  EXPECT_EQ(tree.Width(0), 10);  // 8 main threads + 2 workers
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Regenerate after an intended change: XTIMER_UPDATE_GOLDEN=$PWD bazel run //stacktrace:merge_test
TEST(MergeTest, FoldedGolden) {
  std::string got = FoldedStacks(EightRanks());
  if (const char* root = std::getenv("XTIMER_UPDATE_GOLDEN")) {
    std::ofstream(std::string(root) + "/stacktrace/testdata/merge_golden.folded") << got;
  }
  EXPECT_EQ(got, Slurp("stacktrace/testdata/merge_golden.folded"));
}

TEST(MergeTest, SvgNamesRanksAndOrigins) {
  StackTree tree = EightRanks();
  std::string svg = FlameGraphSvg(tree, "t <&>");
  EXPECT_NE(svg.find("<title>ncclAllReduce\nmodule: /usr/lib/libnccl.so.2\norigin: nccl/cuda\n"
                     "6 ranks: 0-2,4-5,7</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("t &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<&>"), std::string::npos);
}

// Native frames with a DWARF line are labelled with the source file's base name (the module's
// when a file carries a line but no source file).
TEST(MergeTest, NativeFramesShowTheirSourceFileAndLine) {
  EXPECT_EQ(FrameLabel({Frame::kNative, "train", "/job/bin/trainer", 123, "/src/job/train.cc"}),
            "train (train.cc:123)");
  EXPECT_EQ(FrameLabel({Frame::kNative, "f", "/usr/lib/libx.so", 7, ""}), "f (libx.so:7)");
  EXPECT_EQ(FrameLabel({Frame::kNative, "f", "/usr/lib/libx.so", 0, ""}), "f");
  StackTree tree;
  StacksFile f = Rank(0, 1, {});
  f.frames = {{Frame::kNative, "train", "/job/bin/trainer", 123, "/src/job/train.cc"},
              {Frame::kNative, "train", "/job/bin/trainer", 123, "/src/job/other.cc"}};
  f.threads = {{f.pid, "MainThread", {0}, ""}, {f.pid + 1, "worker", {1}, ""}};
  tree.AddRank(f);
  EXPECT_EQ(tree.frames().size(), 4u);  // two threads, and the frames differ by file
  const std::string svg = FlameGraphSvg(tree, "t");
  EXPECT_NE(svg.find("<title>train\nmodule: /job/bin/trainer\nfile: /src/job/train.cc\nline: 123\n"),
            std::string::npos);
  EXPECT_NE(svg.find("train (train.cc:123)"), std::string::npos);
}

TEST(MergeTest, ClassifiesOrigins) {
  EXPECT_EQ(OriginOf({Frame::kPython, "f", "/a/b.py", 3}), Origin::kPython);
  EXPECT_EQ(OriginOf({Frame::kNative, "x", "/usr/lib/libpython3.11.so.1.0", 0}),
            Origin::kInterpreter);
  EXPECT_EQ(OriginOf({Frame::kNative, "_PyEval_EvalFrameDefault", "/usr/bin/python3", 0}),
            Origin::kInterpreter);
  EXPECT_EQ(OriginOf({Frame::kNative, "PyObject_Call", "", 0}), Origin::kInterpreter);
  EXPECT_EQ(OriginOf({Frame::kNative, "x", "/usr/lib/libnccl.so.2", 0}), Origin::kCollective);
  EXPECT_EQ(OriginOf({Frame::kNative, "x", "libcudart.so.13", 0}), Origin::kCollective);
  EXPECT_EQ(OriginOf({Frame::kNative, "ncclKernel", "", 0}), Origin::kCollective);
  EXPECT_EQ(OriginOf({Frame::kNative, "cudaMemcpy", "", 0}), Origin::kCollective);
  EXPECT_EQ(OriginOf({Frame::kNative, "memcpy", "/lib/libc.so.6", 0}), Origin::kNative);
  EXPECT_EQ(OriginOf({Frame::kNative, "x", "/usr/local/cuda/lib64/libcublasLt.so.13", 0}),
            Origin::kCollective);
  EXPECT_EQ(OriginOf({Frame::kNative, "cudaLaunchKernel", "/opt/lib/libxtimer.so", 0}),
            Origin::kXtimer);
  EXPECT_EQ(OriginOf({Frame::kNative, "cudaCheck", "/job/bin/train", 0}), Origin::kNative);
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

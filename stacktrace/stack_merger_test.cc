// StackMerger (files added on several parts, in any order) against StackTree::AddRank (the kept
// files in ascending rank order): the same tree node for node, frame for frame, the same groups
// and the same folded stacks and SVG, on random files with shared and differing frame tables,
// repeated and numbered thread names ("w" twice and a real "w #2"), errors, empty stacks and
// files with no threads.
#include "stacktrace/stack_merger.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stacktrace/flamegraph_svg.h"

namespace xtimer {
namespace stacktrace {
namespace {

StacksFile RandomRank(std::mt19937* rng, int32_t rank) {
  auto pick = [&](int n) { return static_cast<int>((*rng)() % n); };
  static const char* const kNames[] = {"MainThread", "w", "w", "w #2", "pt_autograd", ""};
  StacksFile f;
  f.job = "j";
  f.rank = rank;
  f.world_size = 64;
  f.pid = 100 + pick(3);
  f.error = pick(12) ? "" : "rank error";
  // Mostly one shared table, sometimes in another order or with a frame that differs.
  const int frames = 3 + pick(6);
  for (int i = 0; i < frames; ++i) {
    const int k = pick(8) ? i : pick(12);
    f.frames.push_back({k % 3 ? Frame::kNative : Frame::kPython, "fn" + std::to_string(k),
                        k % 2 ? "/lib/libx.so" : "/job/a.py", k % 3 ? 0 : k,
                        k % 5 == 4 ? "/src/x.cc" : ""});
  }
  for (int t = pick(10) ? 1 + pick(5) : 0; t > 0; --t) {
    Thread th{100 + pick(6), kNames[pick(6)], {}, pick(10) ? "" : "thread error"};
    for (int k = pick(5); k > 0; --k) th.frames.push_back(pick(frames));
    f.threads.push_back(th);
  }
  return f;
}

void ExpectSameTree(const StackTree& want, const StackTree& got) {
  ASSERT_EQ(want.frames().size(), got.frames().size());
  for (size_t i = 0; i < want.frames().size(); ++i) {
    const Frame &a = want.frames()[i], &b = got.frames()[i];
    ASSERT_TRUE(a.kind == b.kind && a.function == b.function && a.module == b.module &&
                a.line == b.line && a.file == b.file)
        << "frame " << i;
  }
  ASSERT_EQ(want.nodes().size(), got.nodes().size());
  for (size_t i = 0; i < want.nodes().size(); ++i) {
    const Node &a = want.nodes()[i], &b = got.nodes()[i];
    ASSERT_EQ(a.frame, b.frame) << "node " << i;
    ASSERT_EQ(a.parent, b.parent) << "node " << i;
    ASSERT_EQ(a.depth, b.depth) << "node " << i;
    ASSERT_EQ(a.children, b.children) << "node " << i;
    ASSERT_EQ(a.ranks, b.ranks) << "node " << i;
    ASSERT_EQ(a.self_ranks, b.self_ranks) << "node " << i;
  }
  const std::vector<RankGroup> wg = want.GroupRanks(), gg = got.GroupRanks();
  ASSERT_EQ(wg.size(), gg.size());
  for (size_t i = 0; i < wg.size(); ++i) {
    EXPECT_EQ(wg[i].ranks, gg[i].ranks);
    EXPECT_EQ(wg[i].frames, gg[i].frames);
    EXPECT_EQ(wg[i].thread, gg[i].thread);
    EXPECT_EQ(wg[i].error, gg[i].error);
  }
  EXPECT_EQ(FoldedStacks(want), FoldedStacks(got));
  EXPECT_EQ(FlameGraphSvg(want, "t"), FlameGraphSvg(got, "t"));
}

TEST(StackMergerTest, BuildsTheTreeOfAddRank) {
  std::mt19937 rng(20261125);
  for (int round = 0; round < 150; ++round) {
    const int count = 1 + static_cast<int>(rng() % 40), parts = 1 + static_cast<int>(rng() % 3);
    std::vector<StacksFile> files;
    for (int i = 0; i < count; ++i) files.push_back(RandomRank(&rng, static_cast<int32_t>(rng() % 48)));
    // Kept: ascending ranks, each once (the first file of a rank), a few files left out.
    std::vector<size_t> kept;
    for (size_t i = 0; i < files.size(); ++i) {
      if (rng() % 8) kept.push_back(i);
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [&](size_t a, size_t b) { return files[a].rank < files[b].rank; });
    kept.erase(std::unique(kept.begin(), kept.end(),
                           [&](size_t a, size_t b) { return files[a].rank == files[b].rank; }),
               kept.end());
    StackTree want;
    for (size_t i : kept) ASSERT_TRUE(want.AddRank(files[i]));
    StackMerger merger(files.size(), parts);
    std::vector<size_t> order(files.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) merger.Add(static_cast<int>(rng() % parts), i, files[i]);
    ExpectSameTree(want, merger.Build(kept));
    if (HasFatalFailure()) return;
  }
}

// Files out of rank order or never added are left out, as AddRank refuses them.
TEST(StackMergerTest, LeavesOutFilesOutOfOrder) {
  std::mt19937 rng(3);
  std::vector<StacksFile> files = {RandomRank(&rng, 4), RandomRank(&rng, 2), RandomRank(&rng, 7)};
  StackMerger merger(files.size() + 1, 1);
  for (size_t i = 0; i < files.size(); ++i) merger.Add(0, i, files[i]);
  StackTree want;
  want.AddRank(files[0]);
  want.AddRank(files[2]);
  ExpectSameTree(want, merger.Build({0, 1, 3, 2}));
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

// The limits that bound `xtimer stacks` whatever its input (docs/stacks.md "Limits"), each at its
// edge: the merged tree's node limit, the folded stacks', the flame graph's and the summary's
// byte limits; and a node with many children (found by index) gives the same tree as a scan.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stacktrace/flamegraph_svg.h"
#include "stacktrace/merge.h"
#include "stacktrace/summary.h"

namespace xtimer {
namespace stacktrace {
namespace {

// One rank whose `threads` threads (named t0, t1, ...) each stand in `depth` frames of their own
// (thread k's frames are k * depth ... k * depth + depth - 1), every frame named with `pad`.
StacksFile Wide(int32_t rank, int threads, int depth, const std::string& pad = "") {
  StacksFile f;
  f.job = "t";
  f.rank = rank;
  f.world_size = 8;
  f.pid = 100;
  for (int k = 0; k < threads; ++k) {
    Thread t{100 + k, "t" + std::to_string(k), {}, ""};
    for (int i = 0; i < depth; ++i) {
      t.frames.push_back(static_cast<uint32_t>(f.frames.size()));
      f.frames.push_back({Frame::kNative, "f" + std::to_string(f.frames.size()) + pad, "/m", 0});
    }
    f.threads.push_back(std::move(t));
  }
  return f;
}

const char kCut[] = "[cut: the merged stacks reached ";

size_t CutLeaves(const StackTree& tree) {
  size_t n = 0;
  for (const Node& node : tree.nodes()) {
    if (node.depth > 0 && FrameLabel(tree.frames()[node.frame]).rfind(kCut, 0) == 0) ++n;
  }
  return n;
}

// 3 threads of 4 frames: 1 root + 3 x (thread + 4 frames) = 16 nodes.
TEST(MergeLimitsTest, TreeNodeLimitAtItsEdge) {
  StackTree exact(16);
  ASSERT_TRUE(exact.AddRank(Wide(0, 3, 4)));
  EXPECT_EQ(exact.nodes().size(), 16u);
  EXPECT_EQ(exact.cut_paths(), 0u);
  EXPECT_EQ(CutLeaves(exact), 0u);

  StackTree less(15);  // the last thread's innermost frame does not fit
  ASSERT_TRUE(less.AddRank(Wide(0, 3, 4)));
  EXPECT_EQ(less.cut_paths(), 1u);
  ASSERT_EQ(CutLeaves(less), 1u);
  EXPECT_EQ(less.nodes().size(), 16u);  // 15, and the cut leaf
  const std::string folded = FoldedStacks(less);
  EXPECT_NE(folded.find("thread t2;f11;f10;f9;[cut: the merged stacks reached 15 frames, the "
                        "limit] [rank 0] 1"),
            std::string::npos)
      << folded;
  // A second rank on the same paths adds no node; one more cut path shares the cut leaf.
  ASSERT_TRUE(less.AddRank(Wide(1, 3, 4)));
  EXPECT_EQ(less.nodes().size(), 16u);
  EXPECT_EQ(less.cut_paths(), 1u);  // the path was walked once
  EXPECT_EQ(less.nodes()[0].ranks.size(), 2u);
}

TEST(MergeLimitsTest, ManyChildrenAreFoundByIndex) {
  // 40 thread names under the root (indexed from 16 on), added by two ranks: one node each.
  StackTree tree;
  ASSERT_TRUE(tree.AddRank(Wide(0, 40, 2)));
  ASSERT_TRUE(tree.AddRank(Wide(1, 40, 2)));
  EXPECT_EQ(tree.nodes().size(), 1u + 40 * 3);
  EXPECT_EQ(tree.nodes()[0].children.size(), 40u);
  for (uint32_t c : tree.nodes()[0].children) EXPECT_EQ(tree.nodes()[c].ranks.size(), 2u);
}

TEST(MergeLimitsTest, FoldedBytesAtTheEdge) {
  StackTree tree;
  ASSERT_TRUE(tree.AddRank(Wide(0, 5, 3, std::string(100, 'x'))));
  OutputCut cut;
  const std::string all = FoldedStacks(tree, kMaxFoldedBytes, &cut);
  EXPECT_EQ(cut.written, 5u);
  EXPECT_EQ(cut.left_out, 0u);
  EXPECT_EQ(FoldedStacks(tree, all.size(), &cut), all);
  EXPECT_EQ(cut.left_out, 0u);
  const std::string less = FoldedStacks(tree, all.size() - 1, &cut);
  EXPECT_EQ(cut.written, 4u);
  EXPECT_EQ(cut.left_out, 1u);
  EXPECT_EQ(less, all.substr(0, less.size()));  // whole lines, in the same order
  EXPECT_EQ(less.back(), '\n');
}

TEST(MergeLimitsTest, SvgBytesAtTheEdge) {
  StackTree tree;
  ASSERT_TRUE(tree.AddRank(Wide(0, 5, 3, std::string(100, 'x'))));
  OutputCut cut;
  const std::string all = FlameGraphSvg(tree, "t", kMaxSvgBytes, &cut);
  EXPECT_EQ(cut.written, tree.nodes().size());
  EXPECT_EQ(cut.left_out, 0u);
  // The limit keeps room for the note that it was cut: a limit that large draws everything.
  const size_t room = all.size() + 256;
  EXPECT_EQ(FlameGraphSvg(tree, "t", room, &cut), all);
  EXPECT_EQ(cut.left_out, 0u);
  const std::string less = FlameGraphSvg(tree, "t", room - 1, &cut);
  EXPECT_LE(less.size(), room - 1);
  EXPECT_EQ(cut.written, tree.nodes().size() - 1);
  EXPECT_EQ(cut.left_out, 1u);
  EXPECT_NE(less.find("cut at 0 MiB (the limit): " + std::to_string(cut.written) +
                      " frames drawn"),
            std::string::npos);
  EXPECT_EQ(less.compare(less.size() - 7, 7, "</svg>\n"), 0);
  // Far less: the head, the note and the script, no frame.
  const std::string none = FlameGraphSvg(tree, "t", 100, &cut);
  EXPECT_EQ(cut.written, 0u);
  EXPECT_NE(none.find("0 frames drawn"), std::string::npos);
}

TEST(MergeLimitsTest, SummaryBytesAtTheEdge) {
  StackTree tree;
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(tree.AddRank(Wide(r, 1, 2, std::to_string(r))));
  SummaryInput in;
  in.tree = &tree;
  in.world_size = 4;
  in.problems = {"a: skipped"};
  const std::string all = SummaryText(in);
  EXPECT_EQ(all.find("left out"), std::string::npos) << all;
  in.max_bytes = all.size() + 256;  // Bounded keeps 256 bytes for its closing line
  EXPECT_EQ(SummaryText(in), all);
  in.max_bytes = all.size() + 255;
  const std::string less = SummaryText(in);
  EXPECT_NE(less.find("... 0 more stacks and 1 more lines left out: the summary's limit is 0 MiB"),
            std::string::npos)
      << less;
  EXPECT_EQ(less.find("skipped: a"), std::string::npos);
  in.max_bytes = 400;
  const std::string groups = SummaryText(in);
  EXPECT_NE(groups.find("more stacks and 1 more lines left out"), std::string::npos) << groups;

  in.max_bytes = kMaxSummaryBytes;
  const std::string json = SummaryJson(in);
  EXPECT_EQ(json.find("left_out"), std::string::npos);
  in.max_bytes = 700;
  const std::string cut = SummaryJson(in);
  EXPECT_NE(cut.find("\"groups_left_out\": "), std::string::npos) << cut;
  EXPECT_LE(cut.size(), 700u);
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

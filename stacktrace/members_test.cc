// Processes whose rank is not known in a merge (merge.h, kFirstProcessMember): they are members
// after the ranks, named and never printed as numbers, in the folded stacks, the SVG, and the
// summary's text and JSON.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stacktrace/flamegraph_svg.h"
#include "stacktrace/merge.h"
#include "stacktrace/stack_merger.h"
#include "stacktrace/summary.h"

namespace xtimer {
namespace stacktrace {
namespace {

StacksFile File(int32_t rank, int64_t pid, const std::string& leaf) {
  StacksFile f;
  f.rank = rank;
  f.world_size = rank < 0 ? -1 : 4;
  f.host = "node-a";
  f.pid = pid;
  f.frames = {{Frame::kNative, leaf, "/lib/x.so", 0}, {Frame::kNative, "main", "/job/a", 0}};
  f.threads = {{pid, "main", {0, 1}, ""}};
  return f;
}

// Rank 1 and the process pid-77 wait in the same place, pid-90 elsewhere.
StackTree Tree() {
  StackMerger merger(3, 1);
  merger.Add(0, 0, File(1, 10, "wait"));
  merger.Add(0, 1, File(-1, 77, "wait"));
  merger.Add(0, 2, File(-1, 90, "serve"));
  merger.SetMember(1, kFirstProcessMember);
  merger.SetMember(2, kFirstProcessMember + 1);
  StackTree tree = merger.Build({0, 1, 2});
  tree.SetProcessNames({"node-a:pid-77", "node-a:pid-90"});
  return tree;
}

TEST(MembersTest, NamesRanksAndProcesses) {
  const StackTree tree = Tree();
  EXPECT_EQ(tree.Members(std::vector<int32_t>{3}), "rank 3");
  EXPECT_EQ(tree.Members(std::vector<int32_t>{0, 1, 2}), "ranks 0-2");
  EXPECT_EQ(tree.Members(std::vector<int32_t>{kFirstProcessMember + 1}),
            "process node-a:pid-90");
  EXPECT_EQ(tree.Members(std::vector<int32_t>{1, kFirstProcessMember, kFirstProcessMember + 1}),
            "rank 1 and processes node-a:pid-77,node-a:pid-90");
  EXPECT_EQ(tree.Members(tree.nodes()[0].ranks),
            "rank 1 and processes node-a:pid-77,node-a:pid-90");
  EXPECT_EQ(tree.ProcessName(kFirstProcessMember + 5), "#5");  // never a bare number
}

TEST(MembersTest, FoldedSvgAndSummaryNameTheProcesses) {
  const StackTree tree = Tree();
  const std::string folded = FoldedStacks(tree);
  EXPECT_NE(folded.find("thread main;main;wait [rank 1 and process node-a:pid-77] 2\n"),
            std::string::npos) << folded;
  EXPECT_NE(folded.find("thread main;main;serve [process node-a:pid-90] 1\n"), std::string::npos)
      << folded;
  const std::string svg = FlameGraphSvg(tree, "t");
  EXPECT_NE(svg.find("rank 1 and process node-a:pid-77 (2)"), std::string::npos);
  EXPECT_EQ(svg.find(std::to_string(kFirstProcessMember)), std::string::npos);

  SummaryInput in;
  in.tree = &tree;
  in.world_size = 4;
  in.missing_ranks = {0, 2, 3};
  const std::string text = SummaryText(in);
  EXPECT_NE(text.find("xtimer stacks: 1 ranks of a world of 4 and 2 processes without a rank, "
                      "2 stacks (main thread of each process)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 and process node-a:pid-77 (2) in wait <- main\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("process node-a:pid-90 (1) in serve <- main   [outlier]\n"),
            std::string::npos) << text;
  const std::string json = SummaryJson(in);
  EXPECT_NE(json.find("\"ranks\": 1, \"processes\": 2,"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"ranks\": [1], \"rank_ranges\": \"1\", \"count\": 2"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"processes\": [\"node-a:pid-90\"]"), std::string::npos) << json;
  EXPECT_EQ(json.find(std::to_string(kFirstProcessMember)), std::string::npos) << json;
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

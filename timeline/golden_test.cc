// The converter's output for the checked-in input (testdata/node*/) is pinned byte for byte.
// Regenerate after an intended change: bazel run //timeline:gen_golden -- $PWD/timeline/testdata
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"
#include "timeline/converter.h"
#include "timeline/synthetic_job.h"

namespace xtimer {
namespace timeline {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Tmp() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

std::string Convert(const std::vector<std::string>& dirs, int jobs, const std::string& out) {
  ConvertOptions opt;
  opt.inputs = dirs;
  opt.output = out;
  opt.groups = "tp2-pp2-dp2";
  opt.jobs = jobs;
  opt.quiet = true;
  ConvertStats stats;
  std::string error;
  EXPECT_TRUE(ConvertTimelines(opt, &stats, &error, stderr)) << error;
  EXPECT_TRUE(stats.skipped.empty());
  return Slurp(out);
}

TEST(Golden, CheckedInInputGivesExpectedTrace) {
  const std::string want = Slurp("timeline/testdata/expected.pftrace");
  ASSERT_FALSE(want.empty()) << "missing timeline/testdata/expected.pftrace";
  for (int jobs : {1, 3, 8}) {
    std::string got = Convert({"timeline/testdata/node0", "timeline/testdata/node1"}, jobs,
                              Tmp() + "/golden.pftrace");
    EXPECT_TRUE(got == want) << "jobs=" << jobs << ": output differs from expected.pftrace ("
                             << got.size() << " vs " << want.size()
                             << " bytes); regenerate with gen_golden if the change is intended";
  }
}

TEST(Golden, GeneratorIsDeterministic) {
  SyntheticJob job;
  job.ranks = 8;
  job.nodes = 2;
  job.steps = 3;
  job.seed = 20260101;
  job.node_skew_ns = {0, 2500000};
  std::string error;
  auto dirs = WriteSyntheticJob(job, Tmp() + "/regen", &error);
  ASSERT_EQ(dirs.size(), 2u) << error;
  EXPECT_TRUE(Convert(dirs, 2, Tmp() + "/regen.pftrace") ==
              Slurp("timeline/testdata/expected.pftrace"));
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer

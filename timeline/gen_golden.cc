// Regenerates timeline/testdata: the synthetic job's timeline files and the expected trace.
//   bazel run //timeline:gen_golden -- $PWD/timeline/testdata
#include <cstdio>
#include <string>

#include "timeline/converter.h"
#include "timeline/synthetic_job.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_golden DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  xtimer::timeline::SyntheticJob job;  // the golden parameters live in golden_test.cc too
  job.ranks = 8;
  job.nodes = 2;
  job.steps = 3;
  job.seed = 20260101;
  job.node_skew_ns = {0, 2500000};
  std::string error;
  auto dirs = xtimer::timeline::WriteSyntheticJob(job, dir, &error);
  if (dirs.empty()) {
    std::fprintf(stderr, "gen_golden: %s\n", error.c_str());
    return 1;
  }
  xtimer::timeline::ConvertOptions opt;
  opt.inputs = dirs;
  opt.output = dir + "/expected.pftrace";
  opt.groups = "tp2-pp2-dp2";
  opt.jobs = 3;
  xtimer::timeline::ConvertStats stats;
  if (!xtimer::timeline::ConvertTimelines(opt, &stats, &error, stderr)) {
    std::fprintf(stderr, "gen_golden: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

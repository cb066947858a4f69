// How many times the readers read each timeline file (file_reads.h counts every read): `xtimer
// report` reads each file's events once, and the op table it makes in that pass is the one
// `xtimer diff` makes; `xtimer analyze` reads them twice (its streamed second pass).
#include "cli/readers/file_reads.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cli/readers/dump_reader.h"
#include "cli/readers/op_table.h"
#include "cli/readers/test_job.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace cli {
namespace {

// A pipelined job (collectives, sends and receives, GEMMs) of 8 ranks on 2 nodes.
std::vector<std::string> WriteJob(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  TestJob job;
  job.steps = 40;
  job.pipeline = true;
  job.slow_rank = 5;
  std::string error;
  std::vector<std::string> dirs =
      WriteTestJob(job, std::string(t ? t : "/tmp") + "/" + name, &error);
  EXPECT_EQ(dirs.size(), 2u) << error;
  return dirs;
}

FileReads Since(const FileReads& before) {
  const FileReads now = FileReadsSoFar();
  return {now.metadata - before.metadata, now.event_passes - before.event_passes};
}

std::map<OpSignature, std::vector<int64_t>> Sorted(OpTable t) {
  for (auto& kv : t.durations) std::sort(kv.second.begin(), kv.second.end());
  return t.durations;
}

TEST(FileReadsTest, TheReportReadsEachFileOnceAndMakesTheDiffsTable) {
  const std::vector<std::string> dirs = WriteJob("report");
  DumpReadOptions ro;
  ro.inputs = dirs;
  ro.jobs = 2;
  ro.op_table = true;
  DumpInput dump;
  std::string error;
  FileReads before = FileReadsSoFar();
  ASSERT_TRUE(ReadDump(ro, &dump, &error)) << error;
  FileReads reads = Since(before);
  ASSERT_EQ(dump.files, 8);
  EXPECT_EQ(reads.event_passes, 8u);
  EXPECT_EQ(reads.metadata, 8u);  // the job check's (job_inputs.h): headers only
  EXPECT_EQ(dump.metadata.size(), 8u);
  for (const analysis::RankInput& r : dump.ranks) EXPECT_FALSE(r.arrivals.empty());

  OpTable diffs;
  before = FileReadsSoFar();
  ASSERT_TRUE(ReadOpTable(dirs, 2, &diffs, &error)) << error;
  EXPECT_EQ(Since(before).event_passes, 8u);
  EXPECT_EQ(dump.table.ranks, diffs.ranks);
  EXPECT_EQ(dump.table.events, diffs.events);
  EXPECT_EQ(dump.table.comm_calls, diffs.comm_calls);
  EXPECT_EQ(dump.table.own.size(), diffs.own.size());
  const auto mine = Sorted(dump.table), theirs = Sorted(diffs);
  ASSERT_EQ(mine.size(), theirs.size());
  bool transfers = false;
  for (auto a = mine.begin(), b = theirs.begin(); a != mine.end(); ++a, ++b) {
    EXPECT_EQ(a->first.name, b->first.name);
    EXPECT_EQ(a->second, b->second) << a->first.name;
    transfers |= a->first.name == kTransferName;
  }
  EXPECT_TRUE(transfers);  // sends and receives were paired in the one pass
}

TEST(FileReadsTest, AnalyzeReadsEachFileTwice) {
  const std::vector<std::string> dirs = WriteJob("analyze");
  DumpReadOptions ro;
  ro.inputs = dirs;
  ro.jobs = 2;
  DumpInput dump;
  DumpReplay replay;
  std::string error;
  const FileReads before = FileReadsSoFar();
  ASSERT_TRUE(OpenDump(ro, &dump, &replay, &error)) << error;
  EXPECT_EQ(Since(before).event_passes, 8u);
  EXPECT_EQ(dump.table.ranks, 0);  // not asked for
  ReadArrivals(replay, &dump.ranks);
  EXPECT_EQ(Since(before).event_passes, 16u);
}

}  // namespace
}  // namespace cli
}  // namespace xtimer

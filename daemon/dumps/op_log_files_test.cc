#include "daemon/dumps/op_log_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

#include "daemon/base/test_util.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

// name -> contents of every file in `dir`.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    files[e->d_name] = testing::ReadFile(dir + "/" + e->d_name);
  }
  closedir(d);
  return files;
}

std::string Line(int i) {
  char buf[64];
  snprintf(buf, sizeof buf, "%d,line-%06d\n", i, i);  // 15 bytes + digits of i
  return buf;
}

class OpLogFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = testing::MakeTempDir("oplog"); }
  void TearDown() override { testing::RemoveTree(root_); }
  std::string root_;
};

TEST_F(OpLogFilesTest, RotatesBySizeEverySegmentWithItsHeader) {
  OpLogFilesOptions o;
  o.root = root_;
  o.rotate_bytes = 1000;
  std::string all;
  {
    OpLogFiles files(o);
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(files.Append("job/1", getuid(), "rank-00002", OpLogFormat::kCsv, false, Line(i)));
      all += Line(i);
    }
  }  // closes and writes everything
  const std::string dir = root_ + "/oplog/job_1";
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::map<std::string, std::string> files = Files(dir);
  ASSERT_GT(files.size(), 3u);
  EXPECT_EQ(files.begin()->first, "rank-00002.000.csv");
  const std::string header = OpLogHeader(OpLogFormat::kCsv, false);
  std::string joined;
  for (const auto& [name, text] : files) {
    EXPECT_LE(text.size(), 1000u) << name;
    ASSERT_EQ(text.compare(0, header.size(), header), 0) << name;
    joined += text.substr(header.size());
  }
  EXPECT_EQ(joined, all);  // nothing lost, nothing twice, in order
}

TEST_F(OpLogFilesTest, DiskCapDeletesOldestSegmentsFirst) {
  OpLogFilesOptions o;
  o.root = root_;
  o.rotate_bytes = 1000;
  o.max_total_bytes = 5000;
  uint64_t written = 0;
  {
    OpLogFiles files(o);
    for (int i = 0; i < 1000; ++i) {
      const std::string stream = i % 2 == 0 ? "rank-00000" : "rank-00001";
      ASSERT_TRUE(files.Append("j", getuid(), stream, OpLogFormat::kJsonl, false, Line(i)));
      written += Line(i).size();
      EXPECT_LE(files.total_bytes(), 5000u);
    }
    EXPECT_GT(files.segments_deleted(), 5u);
    EXPECT_EQ(files.dropped_lines(), 0u);
  }
  uint64_t on_disk = 0;
  const std::map<std::string, std::string> files = Files(root_ + "/oplog/j");
  for (const auto& [name, text] : files) on_disk += text.size();
  EXPECT_LE(on_disk, 5000u);
  EXPECT_GT(on_disk, 3000u);
  // The newest lines survive: the last line of each rank is in its newest segment.
  EXPECT_NE(files.rbegin()->second.find(Line(999)), std::string::npos);
  EXPECT_EQ(files.count("rank-00000.000.jsonl"), 0u);  // the oldest went first
}

TEST_F(OpLogFilesTest, ClosedJobsSegmentsGoFirstAndItsFolderIsReopened) {
  OpLogFilesOptions o;
  o.root = root_;
  o.rotate_bytes = 1000;
  o.max_total_bytes = 3000;
  OpLogFiles files(o);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(files.Append("old", getuid(), "rank-00000", OpLogFormat::kJsonl, false, Line(i)));
  }
  files.CloseJob("old");
  EXPECT_FALSE(Files(root_ + "/oplog/old").empty());
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(files.Append("new", getuid(), "rank-00000", OpLogFormat::kJsonl, false, Line(i)));
  }
  EXPECT_TRUE(Files(root_ + "/oplog/old").empty());  // deleted although the job was closed
  // The job comes back: its folder is opened again, the next segment number used.
  ASSERT_TRUE(files.Append("old", getuid(), "rank-00000", OpLogFormat::kJsonl, false, Line(1)));
  files.Flush();
  EXPECT_EQ(Files(root_ + "/oplog/old").count("rank-00000.000.jsonl"), 1u);
}

TEST_F(OpLogFilesTest, OnlyOpenSegmentsLeftDropsAndCounts) {
  OpLogFilesOptions o;
  o.root = root_;
  o.rotate_bytes = 1 << 20;
  o.max_total_bytes = 100;
  OpLogFiles files(o);
  EXPECT_TRUE(files.Append("j", getuid(), "rank-00000", OpLogFormat::kJsonl, false, Line(1)));
  int dropped = 0;
  for (int i = 0; i < 20; ++i) {
    dropped += !files.Append("j", getuid(), "rank-00000", OpLogFormat::kJsonl, false, Line(i));
  }
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(files.dropped_lines(), static_cast<uint64_t>(dropped));
  EXPECT_LE(files.total_bytes(), 100u);
}

TEST_F(OpLogFilesTest, SymlinkedJobFolderIsRefused) {
  ASSERT_EQ(mkdir((root_ + "/oplog").c_str(), 0755), 0);
  ASSERT_EQ(symlink("/tmp", (root_ + "/oplog/evil").c_str()), 0);
  OpLogFilesOptions o;
  o.root = root_;
  OpLogFiles files(o);
  EXPECT_FALSE(files.Append("evil", getuid(), "rank-00000", OpLogFormat::kCsv, false, Line(1)));
  EXPECT_NE(files.last_error().find("op log of job evil"), std::string::npos) << files.last_error();
  EXPECT_EQ(files.dropped_lines(), 1u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

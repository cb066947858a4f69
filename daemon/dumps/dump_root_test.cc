// Dump files cannot be redirected outside the dump root by symlinks below it: neither by one
// planted before the dump (the writer refuses), nor by a directory swapped for a symlink over
// and over while dumps run (nothing ever appears outside the root).
#include "daemon/dumps/dump_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/base/test_util.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/model/aggregator.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

// Names in `dir` (not "." and ".."); empty when it cannot be read.
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

class DumpRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = testing::MakeTempDir("dumproot");
    root_ = tmp_ + "/root";
    outside_ = tmp_ + "/outside";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0755), 0);
  }
  void TearDown() override { testing::RemoveTree(tmp_); }

  std::string tmp_, root_, outside_;
};

TEST_F(DumpRootTest, CreatesNestedDirectoriesAndOpensTheRoot) {
  std::string error;
  int fd = OpenDirUnderRoot(root_, root_ + "/a/b/c", &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_TRUE(IsDir(root_ + "/a/b/c"));
  fd = OpenDirUnderRoot(root_, root_ + "/a/b/c", &error);  // existing: fine
  ASSERT_GE(fd, 0) << error;
  close(fd);
  fd = OpenDirUnderRoot(root_, root_, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
}

TEST_F(DumpRootTest, RefusesPathsOutsideAndDotComponents) {
  std::string error;
  EXPECT_LT(OpenDirUnderRoot(root_, outside_ + "/x", &error), 0);
  EXPECT_NE(error.find("not under the dump root"), std::string::npos) << error;
  EXPECT_LT(OpenDirUnderRoot(root_, root_ + "x/y", &error), 0);  // a sibling sharing a prefix
  EXPECT_LT(OpenDirUnderRoot(root_, root_ + "/a/../../outside/y", &error), 0);
  EXPECT_NE(error.find("'..'"), std::string::npos) << error;
  EXPECT_TRUE(List(outside_).empty());
  EXPECT_FALSE(IsDir(root_ + "x"));
}

// A request's dump_path: resolved inside the root (relative or absolute, existing or not),
// refused outside it, through a symlink out of it, with '..', or in the daemon's own folders.
TEST_F(DumpRootTest, ResolvesARequestsDumpPathInsideTheRootOnly) {
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/out").c_str()), 0);
  std::string resolved, error;
  ASSERT_TRUE(ResolveDumpPath(root_, "run1/job", &resolved, &error)) << error;
  EXPECT_EQ(resolved, root_ + "/run1/job");
  ASSERT_TRUE(ResolveDumpPath(root_, root_ + "/./run2", &resolved, &error)) << error;
  EXPECT_EQ(resolved, root_ + "/run2");
  const struct {
    std::string path, why;
  } refused[] = {{"", "required"},
                 {"a/../../outside", "'..'"},
                 {outside_ + "/x", "outside the dump root"},
                 {root_ + "x/y", "outside the dump root"},  // a sibling sharing a prefix
                 {"out/x", "outside the dump root"},        // a symlink out of the root
                 {"crash-3/job", "a folder of the daemon's own"},
                 {"oplog", "a folder of the daemon's own"},
                 {std::string(kMaxPathBytes + 1, 'a'), "longer than"},
                 {std::string("a\0b", 3), "NUL"}};
  for (const auto& r : refused) {
    error.clear();
    EXPECT_FALSE(ResolveDumpPath(root_, r.path, &resolved, &error)) << r.path;
    EXPECT_NE(error.find(r.why), std::string::npos) << error;
    EXPECT_EQ(error.rfind("dump_path: ", 0), 0u) << error;
  }
  EXPECT_TRUE(List(outside_).empty());  // nothing is created by resolving
}

TEST_F(DumpRootTest, RefusesASymlinkAnywhereBelowTheRoot) {
  ASSERT_EQ(mkdir((root_ + "/d").c_str(), 0755), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/d/link").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/top").c_str()), 0);
  std::string error;
  for (const std::string& dir : {root_ + "/d/link/x/y", root_ + "/d/link", root_ + "/top/z"}) {
    EXPECT_LT(OpenDirUnderRoot(root_, dir, &error), 0) << dir;
    EXPECT_NE(error.find("is a symlink or not a directory"), std::string::npos) << error;
  }
  // A plain file in the way.
  ASSERT_EQ(close(open((root_ + "/file").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  EXPECT_LT(OpenDirUnderRoot(root_, root_ + "/file/x", &error), 0);
  EXPECT_TRUE(List(outside_).empty());
}

// The writer itself: a history dump whose job directory is a symlink to outside the root fails
// that file with an error and creates nothing outside.
class DumpWriterRootTest : public DumpRootTest {
 protected:
  void SetUp() override {
    DumpRootTest::SetUp();
    aggregator_ = std::make_unique<Aggregator>(AggregatorOptions(), RealtimeNs());
    format::Identity id;
    id.job = "job1";
    id.host = "h";
    id.rank = 0;
    id.local_rank = 0;
    id.world_size = 1;
    const ProcessId pid = aggregator_->AddProcess(4242, id);
    std::vector<format::RecordSlot> v;
    for (int i = 0; i < 10; ++i) {
      format::RecordSlot s = testing::MakeOp(format::Operation::kGemmEx, format::DType::kBF16, 1000);
      s.op.cpu_launch_ns = RealtimeNs() - 1000000000 + i;
      s.op.seq = static_cast<uint64_t>(i);
      v.push_back(s);
    }
    aggregator_->Ingest(pid, v.data(), v.size(), RealtimeNs());
    dumps_ = std::make_unique<DumpManager>(aggregator_.get(), root_, "node", RealtimeNs);
  }
  void TearDown() override {
    dumps_.reset();
    aggregator_.reset();
    DumpRootTest::TearDown();
  }
  // A history dump into `dir`; returns the one file's error ("" when written).
  std::string Dump(const std::string& dir) {
    DumpRequest q;
    q.dir = dir;
    q.history = 10;
    q.dump_time_ns = RealtimeNs();
    DumpStatus st;
    std::string error;
    if (dumps_->Start(q, &st, &error) != DumpError::kNone) return "start: " + error;
    if (st.files.size() != 1) return "expected one file, got " + std::to_string(st.files.size());
    return st.files[0].error;
  }

  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<DumpManager> dumps_;
};

// Issue 36: one user held the only dump slot with a count capture for up to 600 s and everyone
// else got 409. Now another user's request ends it once it has held the slot its fair share
// (its files are written); the same user still waits for its own capture.
TEST_F(DumpWriterRootTest, AnotherUsersRequestEndsACaptureAfterItsFairShare) {
  dumps_->SetFairShareForTesting(200 * 1000000LL);
  DumpRequest hog;
  hog.dir = root_ + "/hog";
  hog.count = 1000000;
  hog.timeout_s = 600;
  hog.idle_s = 600;
  hog.dump_time_ns = RealtimeNs();
  hog.owner_uid = 2601;
  DumpStatus st;
  std::string error;
  ASSERT_EQ(dumps_->Start(hog, &st, &error), DumpError::kNone) << error;
  ASSERT_EQ(st.state, "capturing");
  EXPECT_EQ(dumps_->Start(hog, &st, &error), DumpError::kBusy);
  EXPECT_NE(error.find("wait for it"), std::string::npos) << error;

  DumpRequest other;
  other.dir = root_ + "/other";
  other.history = 10;
  other.dump_time_ns = RealtimeNs();
  other.owner_uid = 2602;
  DumpError e = dumps_->Start(other, &st, &error);
  if (e == DumpError::kBusy) {  // within the share (unless the machine stalled 200 ms)
    EXPECT_NE(error.find("gives way after"), std::string::npos) << error;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (e == DumpError::kBusy && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      e = dumps_->Start(other, &st, &error);
    }
  }
  ASSERT_EQ(e, DumpError::kNone) << error;
  EXPECT_EQ(st.state, "written");
  EXPECT_EQ(List(root_ + "/other/job1"), std::vector<std::string>{"00000-00001.timeline"});
  EXPECT_EQ(List(root_ + "/hog/job1"), std::vector<std::string>{"00000-00001.timeline"});
}

TEST_F(DumpWriterRootTest, WritesUnderTheRootAndRefusesASymlinkedJobDirectory) {
  EXPECT_EQ(Dump(root_ + "/ok"), "");
  EXPECT_EQ(List(root_ + "/ok/job1"), std::vector<std::string>{"00000-00001.timeline"});
  // The job directory itself, and a directory above the missing ones.
  ASSERT_EQ(mkdir((root_ + "/bad").c_str(), 0755), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/bad/job1").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/up").c_str()), 0);
  for (const std::string& dir : {root_ + "/bad", root_ + "/up/x/y"}) {
    const std::string error = Dump(dir);
    EXPECT_NE(error.find("is a symlink or not a directory"), std::string::npos) << error;
  }
  EXPECT_TRUE(List(outside_).empty());
}

// One thread swaps root/d between a real directory and a symlink to outside as fast as it can
// for 2 s while history dumps into root/d/x run back to back: some dumps fail, some succeed, and
// nothing is ever created outside the root.
TEST_F(DumpWriterRootTest, SymlinkSwapDuringDumpsCreatesNothingOutside) {
  const std::string d = root_ + "/d", moved = root_ + "/d.real";
  ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread swapper([&] {
    while (!stop.load()) {
      if (rename(d.c_str(), moved.c_str()) != 0) continue;
      if (symlink(outside_.c_str(), d.c_str()) == 0) {
        std::this_thread::yield();
        unlink(d.c_str());
      }
      // root/d may have been recreated by a dump in between: put the real one back over it
      // when it is an empty directory, else drop the old one.
      if (rename(moved.c_str(), d.c_str()) != 0) testing::RemoveTree(moved);
      swaps.fetch_add(1);
    }
  });
  int written = 0, refused = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end) {
    (Dump(d + "/x").empty() ? written : refused) += 1;
  }
  stop.store(true);
  swapper.join();
  EXPECT_TRUE(List(outside_).empty()) << "created outside the root: " << List(outside_)[0];
  EXPECT_GT(swaps.load(), 0);
  EXPECT_GT(written + refused, 0);
  std::printf("symlink swap: %d swaps, %d dumps written, %d refused\n", swaps.load(), written,
              refused);
}

// A pid no process has: a child that has exited and been reaped.
pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  testing::WaitExit(pid, 5000);
  return pid;
}

void Touch(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0) << path;
  close(fd);
}

// What a daemon killed with -9 in the middle of dumps leaves, and what must stay.
TEST_F(DumpRootTest, RemovesLeftoversOfInterruptedDumpsOnly) {
  const std::string dead = std::to_string(DeadPid());
  const std::string live = std::to_string(getppid());
  ASSERT_EQ(mkdir((root_ + "/hang-c1-3").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/hang-c1-3/job").c_str(), 0755), 0);
  Touch(root_ + "/hang-c1-3/job/00001-00002.timeline.tmp." + dead);
  ASSERT_EQ(mkdir((root_ + "/hang-c2-1").c_str(), 0755), 0);  // killed before any file
  ASSERT_EQ(mkdir((root_ + "/hang-c2-1/job").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/run1").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/run1/job").c_str(), 0755), 0);
  Touch(root_ + "/run1/job/00000-00002.timeline");  // finished: stays
  Touch(root_ + "/run1/job/00001-00002.timeline.tmp." + dead);
  Touch(root_ + "/run1/job/00003-00004.timeline.tmp." + live);  // another daemon's, writing
  ASSERT_EQ(mkdir((root_ + "/mine").c_str(), 0755), 0);  // an empty folder of no dump: stays
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/hang-link").c_str()), 0);
  Touch(outside_ + "/x.tmp." + dead);  // reached only through the symlink: never touched

  const Leftovers left = RemoveDumpLeftovers(root_);
  EXPECT_EQ(left.tmp_files, 2);
  EXPECT_EQ(left.empty_dirs, 4);  // hang-c1-3, its job, hang-c2-1, its job
  EXPECT_EQ(left.errors, 0);
  std::vector<std::string> names = List(root_);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"hang-link", "mine", "run1"}));
  names = List(root_ + "/run1/job");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"00000-00002.timeline",
                                             "00003-00004.timeline.tmp." + live}));
  EXPECT_EQ(List(outside_), (std::vector<std::string>{"x.tmp." + dead}));
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

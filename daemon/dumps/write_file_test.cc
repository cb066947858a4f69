// WriteFileUnderRoot, the writer of .stacks files and crash.json into a job's folder, which
// belongs to the job's user: nothing that user planted there can block, redirect or replace the
// write (issue 36: a FIFO at the temporary name froze every control worker and the crash
// reporter).
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "daemon/dumps/stack_capture.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(WriteFileUnderRootTest, PlantedFifoAndSymlinkAtTheTemporaryNamesAreSkipped) {
  const char* t = getenv("XTIMER_TEST_TMP");
  std::string root = std::string(t != nullptr ? t : "/tmp") + "/xt-write-XXXXXX";
  ASSERT_NE(mkdtemp(&root[0]), nullptr);
  chmod(root.c_str(), 0755);
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const uint32_t user = geteuid() == 0 ? nobody->pw_uid : geteuid();
  const std::string job = root + "/job";
  ASSERT_EQ(mkdir(job.c_str(), 0700), 0);
  // What the job's user planted in its own folder, at the names the daemon will try.
  const std::string pid = std::to_string(getpid());
  const std::string fifo = job + "/crash.json.tmp." + pid;
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  const std::string target = root + "/precious";
  std::ofstream(target) << "precious\n";
  ASSERT_EQ(symlink(target.c_str(), (job + "/crash.json.tmp." + pid + ".1").c_str()), 0);
  if (geteuid() == 0) ASSERT_EQ(chown(job.c_str(), user, user), 0);

  std::string error;
  auto write = std::async(std::launch::async, [&] {
    return WriteFileUnderRoot(root, job, "crash.json", "{\"ok\": 1}\n", user, &error);
  });
  const bool finished = write.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!finished) close(open(fifo.c_str(), O_RDONLY | O_NONBLOCK));  // unblock the old writer
  ASSERT_TRUE(finished) << "the write blocked on the planted FIFO";
  ASSERT_TRUE(write.get()) << error;
  EXPECT_EQ(Read(job + "/crash.json"), "{\"ok\": 1}\n");
  EXPECT_EQ(Read(target), "precious\n");
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));  // left alone, never opened
  system(("rm -rf " + root).c_str());
}

// Issue 36: on a full disk DumpStack answered "written" for a file it could not write, and
// empty folders stayed. A write that fails (a file size limit stands in for the full disk)
// answers false with the cause and leaves neither a temporary file nor an empty folder.
TEST(WriteFileUnderRootTest, AFailedWriteLeavesNothingBehind) {
  const char* t = getenv("XTIMER_TEST_TMP");
  std::string root = std::string(t != nullptr ? t : "/tmp") + "/xt-full-XXXXXX";
  ASSERT_NE(mkdtemp(&root[0]), nullptr);
  chmod(root.c_str(), 0755);
  const std::string crash_dir = root + "/crash-1-2";
  ASSERT_EQ(mkdir(crash_dir.c_str(), 0755), 0);
  struct rlimit old_limit, tiny = {16, RLIM_INFINITY};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  tiny.rlim_max = old_limit.rlim_max;
  signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG, as ENOSPC would
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  std::string error;
  const bool ok = WriteFileUnderRoot(root, crash_dir + "/job", "crash.json",
                                     std::string(4096, 'x'), geteuid(), &error);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("crash.json"), std::string::npos) << error;
  struct stat st;
  EXPECT_NE(lstat((crash_dir + "/job").c_str(), &st), 0) << "an empty job folder stayed";
  RemoveDirIfEmpty(root, crash_dir);
  EXPECT_NE(lstat(crash_dir.c_str(), &st), 0) << "an empty crash folder stayed";
  system(("rm -rf " + root).c_str());
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

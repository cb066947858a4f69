// Issue 20: a local user cannot steer the daemon through its run directory or its dump root.
// Each plant (a symlink named xtimerd.lock, xtimerd.pid.tmp or xtimerd.log, a symlinked dump
// root, a symlinked or foreign parent component, a directory created first by another user)
// leaves its target untouched and the real xtimerd refusing to start, with a message naming the
// path and the fix. The plants by another user run as root and drop to uid 65534 with setpriv;
// without root they are skipped, saying so.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/base/test_util.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr char kTargetText[] = "precious\n";

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = testing::MakeTempDir("rundir_test");
    ASSERT_FALSE(tmp_.empty());
    // Like /tmp: root-owned (ours), sticky and world-writable, so another user can plant in it.
    ASSERT_EQ(chmod(tmp_.c_str(), 01777), 0);
    target_ = tmp_ + "/target";
    WriteTarget();
    binary_ = testing::RunfilesPath("daemon/xtimerd");
  }
  void TearDown() override { testing::RemoveTree(tmp_); }

  void WriteTarget() {
    const int fd = open(target_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, kTargetText, sizeof(kTargetText) - 1),
              static_cast<ssize_t>(sizeof(kTargetText) - 1));
    close(fd);
  }

  // Runs xtimerd (exits at once when it starts); its exit status, output in *out.
  int RunDaemon(const std::string& run_dir, const std::string& dump_root, std::string* out,
                std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {binary_, "--run-dir=" + run_dir, "--dump-root=" + dump_root,
                                     "--metrics-port=0", "--control-port=0", "--once=0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return testing::RunCapture(argv, "", out);
  }

  // The plant must have left the target as it was, and the daemon refusing with `want` (the
  // path) and `fix` in its message.
  void ExpectRefused(const std::string& run_dir, const std::string& dump_root,
                     const std::string& want, const std::string& fix,
                     std::vector<std::string> extra = {}) {
    std::string out;
    EXPECT_EQ(RunDaemon(run_dir, dump_root, &out, extra), 1) << out;
    EXPECT_NE(out.find(want), std::string::npos) << "message lacks " << want << ":\n" << out;
    EXPECT_NE(out.find(fix), std::string::npos) << "message lacks the fix " << fix << ":\n"
                                                << out;
    EXPECT_EQ(testing::ReadFile(target_), kTargetText) << "the plant's target was written";
    struct stat st;
    ASSERT_EQ(stat(target_.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
  }

  // Runs `script` (sh -c) as uid/gid 65534, or skips the test when not root.
  bool AsNobody(const std::string& script) {
    std::string out;
    const int rc = testing::RunCapture({"/usr/bin/setpriv", "--reuid", "65534", "--regid",
                                        "65534", "--clear-groups", "/bin/sh", "-c", script},
                                       "", &out);
    EXPECT_EQ(rc, 0) << script << ":\n" << out;
    return rc == 0;
  }

  std::string tmp_, target_, binary_;
};

TEST_F(RunDirTest, StartsOnAFreshDirectoryWithSafeModes) {
  std::string out;
  ASSERT_EQ(RunDaemon(tmp_ + "/a/run", tmp_ + "/a/dumps", &out), 0) << out;
  for (const char* dir : {"/a/run", "/a/dumps"}) {
    struct stat st;
    ASSERT_EQ(lstat((tmp_ + dir).c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_EQ(st.st_mode & 022, 0u) << dir;
  }
}

TEST_F(RunDirTest, SymlinkedFilesInTheRunDirectoryAreRefused) {
  const std::string run0 = tmp_ + "/run";
  for (const char* name : {"xtimerd.lock", "xtimerd.pid.tmp", "xtimerd.log"}) {
    SCOPED_TRACE(name);
    const std::string run = run0 + "-" + name;  // a fresh directory: the others' files are there
    ASSERT_EQ(mkdir(run.c_str(), 0755), 0);
    const std::string link = run + "/" + name;
    ASSERT_EQ(symlink(target_.c_str(), link.c_str()), 0);
    ExpectRefused(run, tmp_ + "/dumps", link + " is a symlink", "remove it (rm " + link + ")",
                  {"--daemonize"});
  }
  // An explicit --log-file that is a symlink too.
  const std::string log = tmp_ + "/log";
  ASSERT_EQ(symlink(target_.c_str(), log.c_str()), 0);
  ExpectRefused(run0, tmp_ + "/dumps", log + " is a symlink", "remove it", {"--log-file=" + log});
}

TEST_F(RunDirTest, SymlinkedDumpRootAndParentsAreRefused) {
  const std::string elsewhere = tmp_ + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0755), 0);
  const std::string link = tmp_ + "/dumps";
  ASSERT_EQ(symlink(elsewhere.c_str(), link.c_str()), 0);
  ExpectRefused(tmp_ + "/run", link, link + " (in the dump root " + link + ") is a symlink",
                "--dump-root (XTIMER_DUMP_ROOT)");
  ExpectRefused(tmp_ + "/run", link + "/sub", link + " (in the dump root", "rm " + link);
  ExpectRefused(link + "/run", tmp_ + "/d", link + " (in the run directory", "--run-dir");
  EXPECT_EQ(access((elsewhere + "/sub").c_str(), F_OK), -1) << "created through the symlink";
  EXPECT_EQ(access((elsewhere + "/run").c_str(), F_OK), -1) << "created through the symlink";
}

TEST_F(RunDirTest, WritableDirectoriesAreRefused) {
  const std::string run = tmp_ + "/run";
  ASSERT_EQ(mkdir(run.c_str(), 0755), 0);
  ASSERT_EQ(chmod(run.c_str(), 0777), 0);
  ExpectRefused(run, tmp_ + "/dumps", "is writable by group or others (mode 0777)",
                "chmod go-w " + run);
  const std::string open_parent = tmp_ + "/open";
  ASSERT_EQ(mkdir(open_parent.c_str(), 0755), 0);
  ASSERT_EQ(chmod(open_parent.c_str(), 0777), 0);  // not sticky: anyone may rename its entries
  ExpectRefused(tmp_ + "/run2", open_parent + "/dumps",
                open_parent + ", a parent of the dump root", "chmod go-w " + open_parent);
}

// What a daemon killed with -9 in the middle of an automatic dump leaves (an empty hang-*
// folder, a 0-byte NAME.tmp.PID) is gone after the next start, and the log counts it.
TEST_F(RunDirTest, ARestartRemovesWhatAKilledDumpLeft) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  testing::WaitExit(child, 5000);  // a pid no process has now: the killed daemon's
  const std::string dumps = tmp_ + "/dumps";
  const std::string job = dumps + "/hang-0123abcd-7/train";
  ASSERT_EQ(mkdir(dumps.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dumps + "/hang-0123abcd-7").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(job.c_str(), 0755), 0);
  const std::string tmp = job + "/00001-00008.timeline.tmp." + std::to_string(child);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(mkdir((dumps + "/hang-0123abcd-8").c_str(), 0755), 0);
  std::string out;
  ASSERT_EQ(RunDaemon(tmp_ + "/run", dumps, &out), 0) << out;
  EXPECT_NE(out.find("removed 1 unfinished file(s) and 3 empty folder(s) of interrupted dumps"),
            std::string::npos)
      << out;
  EXPECT_EQ(access((dumps + "/hang-0123abcd-7").c_str(), F_OK), -1);
  EXPECT_EQ(access((dumps + "/hang-0123abcd-8").c_str(), F_OK), -1);
}

TEST_F(RunDirTest, PlantsOfAnotherUserAreRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: plants by uid 65534 run through setpriv";
  const std::string run = tmp_ + "/run";
  // Another user creates the run directory first, with every file the daemon opens a symlink.
  ASSERT_TRUE(AsNobody("mkdir -m 0755 " + run + " && for f in xtimerd.lock xtimerd.pid.tmp "
                       "xtimerd.pid xtimerd.log; do ln -s " + target_ + " " + run + "/$f; done"));
  ExpectRefused(run, tmp_ + "/dumps", "the run directory " + run + " belongs to uid 65534",
                "rm -rf " + run, {"--daemonize"});
  // ... or the dump root, or a parent of either.
  const std::string dumps = tmp_ + "/dumps";
  ASSERT_TRUE(AsNobody("mkdir -m 0755 " + dumps));
  ExpectRefused(tmp_ + "/run-ok", dumps, "the dump root " + dumps + " belongs to uid 65534",
                "--dump-root (XTIMER_DUMP_ROOT)");
  const std::string parent = tmp_ + "/nobody";
  ASSERT_TRUE(AsNobody("mkdir -m 0755 " + parent + " && mkdir -m 0755 " + parent + "/run"));
  ExpectRefused(parent + "/run", tmp_ + "/dumps-ok",
                parent + ", a parent of the run directory " + parent + "/run" +
                    ", belongs to uid 65534",
                "--run-dir (XTIMER_RUN_DIR)");
  // A symlinked parent planted by that user.
  ASSERT_TRUE(AsNobody("ln -s /etc " + tmp_ + "/etc-link"));
  ExpectRefused(tmp_ + "/run-ok", tmp_ + "/etc-link/xtimer-dumps",
                tmp_ + "/etc-link (in the dump root", "is a symlink");
  EXPECT_EQ(access("/etc/xtimer-dumps", F_OK), -1);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

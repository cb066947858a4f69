// The job a registration's label names (daemon/model/job_scope.h): the cgroup read through a fake
// /proc and cgroup tree, and the scoping rule.
#include "daemon/model/job_scope.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr char kPodUid[] = "1b2c3d4e-0000-4abc-8def-0123456789ab";
constexpr char kPodSlice[] = "kubepods-burstable-pod1b2c3d4e_0000_4abc_8def_0123456789ab.slice";

class JobScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/job_scope_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    top_ = tmpl;
    roots_.proc = top_ + "/proc";
    roots_.cgroup = top_ + "/cgroup";
    MakeDirs(roots_.proc + "/42");
    MakeDirs(roots_.cgroup);
  }
  void TearDown() override { std::system(("rm -rf " + top_).c_str()); }

  static void MakeDirs(const std::string& path) {
    ASSERT_EQ(std::system(("mkdir -p '" + path + "'").c_str()), 0);
  }
  // /proc/42/cgroup says `lines`; `dirs` (below the cgroup root) exist.
  KernelJob Job(const std::string& lines, const std::string& dirs) {
    std::ofstream(roots_.proc + "/42/cgroup") << lines;
    if (!dirs.empty()) MakeDirs(roots_.cgroup + "/" + dirs);
    return ReadKernelJob(roots_, 42);
  }

  std::string top_;
  KernelRoots roots_;
};

TEST_F(JobScopeTest, SlurmJobOfCgroupV2) {
  const std::string path = "system.slice/slurmstepd.scope/job_1234/step_0/user/task_0";
  const KernelJob j = Job("0::/" + path + "\n", path);
  EXPECT_EQ(j.kind, KernelJob::Kind::kSlurm);
  EXPECT_EQ(j.id, "1234");
}

TEST_F(JobScopeTest, SlurmJobOfCgroupV1) {
  const std::string path = "slurm/uid_1000/job_77/step_0/task_0";
  const KernelJob j =
      Job("12:pids:/user.slice\n4:freezer:/" + path + "\n1:name=systemd:/x\n", "freezer/" + path);
  EXPECT_EQ(j.kind, KernelJob::Kind::kSlurm);
  EXPECT_EQ(j.id, "77");
}

TEST_F(JobScopeTest, PodOfSystemdAndCgroupfsDrivers) {
  const std::string systemd = std::string("kubepods.slice/kubepods-burstable.slice/") +
                              kPodSlice + "/cri-containerd-abc.scope";
  KernelJob j = Job("0::/" + systemd + "\n", systemd);
  EXPECT_EQ(j.kind, KernelJob::Kind::kPod);
  EXPECT_EQ(j.id, kPodUid);
  const std::string cgroupfs = std::string("kubepods/burstable/pod") + kPodUid + "/c0ffee";
  j = Job("5:memory:/" + cgroupfs + "\n", "memory/" + cgroupfs);
  EXPECT_EQ(j.kind, KernelJob::Kind::kPod);
  EXPECT_EQ(j.id, kPodUid);
}

TEST_F(JobScopeTest, NoJobWhereTheTreeDoesNotConfirmIt) {
  // Not in the cgroup tree (the process lies about nothing: the kernel's file names a path that
  // is not there, e.g. another namespace's).
  EXPECT_EQ(Job("0::/system.slice/slurmstepd.scope/job_9/step_0\n", "").kind,
            KernelJob::Kind::kNone);
  // A symlink on the way.
  MakeDirs(roots_.cgroup + "/real/job_5");
  ASSERT_EQ(symlink((roots_.cgroup + "/real").c_str(), (roots_.cgroup + "/link").c_str()), 0);
  EXPECT_EQ(Job("0::/link/job_5\n", "").kind, KernelJob::Kind::kNone);
  // Names that only look like a job, a pod outside kubepods, no pid, no file.
  EXPECT_EQ(Job("0::/a/job_12x/b\n", "a/job_12x/b").kind, KernelJob::Kind::kNone);
  EXPECT_EQ(Job(std::string("0::/pod") + kPodUid + "\n", std::string("pod") + kPodUid).kind,
            KernelJob::Kind::kNone);
  EXPECT_EQ(ReadKernelJob(roots_, 0).kind, KernelJob::Kind::kNone);
  EXPECT_EQ(ReadKernelJob(roots_, 43).kind, KernelJob::Kind::kNone);
}

TEST_F(JobScopeTest, UserDelegatedSubtreeIsNoJob) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the delegated directory belongs to uid 1000";
  // systemd delegates user@UID.service to the user, who may name directories below it.
  const std::string user = "user.slice/user-1000.slice/user@1000.service";
  const std::string path = user + "/app.slice/job_1234/step_0";
  MakeDirs(roots_.cgroup + "/" + path);
  if (chown((roots_.cgroup + "/" + user).c_str(), 1000, 1000) != 0) {
    GTEST_SKIP() << "cannot give a directory to uid 1000 here (a sandbox's user namespace maps "
                    "root only): "
                 << strerror(errno);
  }
  EXPECT_EQ(Job("0::/" + path + "\n", "").kind, KernelJob::Kind::kNone);
  // The same path owned by root all the way is a job: the owner check made the difference.
  ASSERT_EQ(chown((roots_.cgroup + "/" + user).c_str(), 0, 0), 0);
  EXPECT_EQ(Job("0::/" + path + "\n", "").kind, KernelJob::Kind::kSlurm);
}

TEST(JobIdForTest, ScopedByUidUnlessPrivilegedOrBoundByTheKernel) {
  const KernelJob none;
  const KernelJob slurm{KernelJob::Kind::kSlurm, "1234"};
  const KernelJob pod{KernelJob::Kind::kPod, kPodUid};
  EXPECT_EQ(JobIdFor("train", 1000, false, none), "train@u1000");
  EXPECT_EQ(JobIdFor("train", 1001, false, none), "train@u1001");
  EXPECT_EQ(JobIdFor("train", 0, true, none), "train");
  EXPECT_EQ(JobIdFor("slurm-1234", 1000, false, slurm), "slurm-1234");
  EXPECT_EQ(JobIdFor("slurm-1234.3", 1000, false, slurm), "slurm-1234.3");
  EXPECT_EQ(JobIdFor("slurm-12345", 1000, false, slurm), "slurm-12345@u1000");
  EXPECT_EQ(JobIdFor("slurm-99", 1000, false, slurm), "slurm-99@u1000");
  EXPECT_EQ(JobIdFor("slurm-1234", 1000, false, none), "slurm-1234@u1000");
  EXPECT_EQ(JobIdFor("train", 1000, false, slurm), "train@u1000");
  EXPECT_EQ(JobIdFor("train", 1000, false, pod), "train");
}

TEST(SanitizeScopedJobIdTest, KeepsTheScope) {
  EXPECT_EQ(SanitizeScopedJobId("train"), "train");
  EXPECT_EQ(SanitizeScopedJobId("a b/c"), "a_b_c");
  EXPECT_EQ(SanitizeScopedJobId("train@u1000"), "train@u1000");
  const std::string long_label(63, 'x');
  EXPECT_EQ(SanitizeScopedJobId(long_label + "@u1000"), long_label + "@u1000");
  EXPECT_EQ(SanitizeScopedJobId(".."), "");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

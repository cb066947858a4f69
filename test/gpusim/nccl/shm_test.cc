#include "test/gpusim/nccl/shm.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/gpusim/nccl/comm.h"

namespace xtsim {
namespace nccl {
namespace {

bool NameExists(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// The pid of a process that has certainly exited (and been reaped).
int32_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status;
  waitpid(pid, &status, 0);
  return pid;
}

std::string FreshName() {
  CommKey key = RandomKey();
  return SegmentName(key.bytes);
}

TEST(ShmTest, ThreadsShareOneMappingAndSizesMustAgree) {
  std::string name = FreshName(), error;
  std::shared_ptr<Segment> a = Segment::Open(name, 2, &error);
  ASSERT_NE(a, nullptr) << error;
  std::shared_ptr<Segment> b = Segment::Open(name, 2, &error);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(Segment::Open(name, 3, &error), nullptr);
  EXPECT_NE(error.find("2 ranks, not 3"), std::string::npos) << error;
  EXPECT_GE(a->slot_bytes(), 64u);
  EXPECT_NE(a->staging(1, 1), a->staging(1, 0));
  EXPECT_NE(a->ring(0, 1), a->ring(1, 0));
  a->Unlink();
  EXPECT_FALSE(NameExists(name));
}

TEST(ShmTest, CommunicatorUnlinksItsNameOnceEveryoneJoined) {
  CommKey key = RandomKey();
  std::string name = SegmentName(key.bytes);
  CommOptions options;
  std::shared_ptr<Comm> r0 = Comm::CreateRoot(key, 2, 0, options);
  EXPECT_EQ(r0->TryAdvance(), ncclInProgress);
  EXPECT_TRUE(NameExists(name));
  std::shared_ptr<Comm> r1 = Comm::CreateRoot(key, 2, 1, options);
  EXPECT_FALSE(NameExists(name));
  EXPECT_EQ(r0->Wait(), ncclSuccess);
  EXPECT_EQ(r1->Wait(), ncclSuccess);
  // The same rank twice is refused.
  CommKey other = RandomKey();
  std::shared_ptr<Comm> x = Comm::CreateRoot(other, 2, 0, options);
  std::shared_ptr<Comm> y = Comm::CreateRoot(other, 2, 0, options);
  EXPECT_EQ(y->TryAdvance(), ncclInvalidUsage);
  EXPECT_NE(y->error().find("twice"), std::string::npos) << y->error();
  x.reset();  // abandoned: its name goes too
  EXPECT_FALSE(NameExists(SegmentName(other.bytes)));
}

class SweepTest : public ::testing::Test {
 protected:
  // A segment left by a creator that died during initialisation, as seen from `pidns`.
  std::string MakeAbandoned(uint64_t pidns) {
    std::string name = FreshName(), error;
    std::shared_ptr<Segment> seg = Segment::Open(name, 2, &error);
    EXPECT_NE(seg, nullptr) << error;
    seg->header()->creator_pid = DeadPid();
    seg->header()->creator_pidns = pidns;
    ShmRank* r = seg->rank(0);
    r->pid = seg->header()->creator_pid;
    r->pidns = pidns;
    r->claimed.store(1);
    r->present.store(1);
    return name;  // our mapping goes away here; the name stays
  }
};

TEST_F(SweepTest, RemovesSegmentsOfDeadProcesses) {
  std::string name = MakeAbandoned(PidNamespace());
  ASSERT_TRUE(NameExists(name));
  SweepStaleSegments();
  EXPECT_FALSE(NameExists(name));
}

// Containers and sandboxes share /dev/shm with their own pid numbering: never judge their pids.
TEST_F(SweepTest, KeepsSegmentsOfOtherPidNamespaces) {
  std::string name = MakeAbandoned(PidNamespace() ^ 1);
  SweepStaleSegments();
  EXPECT_TRUE(NameExists(name));
  shm_unlink(name.c_str());
}

TEST_F(SweepTest, KeepsSegmentsOfLiveProcesses) {
  std::string name = FreshName(), error;
  std::shared_ptr<Segment> seg = Segment::Open(name, 2, &error);
  ASSERT_NE(seg, nullptr) << error;
  SweepStaleSegments();
  EXPECT_TRUE(NameExists(name));
  seg->Unlink();
}

}  // namespace
}  // namespace nccl
}  // namespace xtsim

#include "hook/exit_marker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace xtimer {
namespace hook {
namespace {

// A header in memory shared with forked children, standing in for the ring's.
format::RingHeader* g_header = nullptr;
format::RingHeader* Header() { return g_header; }

class ExitMarkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* p = mmap(nullptr, sizeof(format::RingHeader), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    memset(p, 0, sizeof(format::RingHeader));
    g_header = static_cast<format::RingHeader*>(p);
  }
  void TearDown() override { munmap(g_header, sizeof(format::RingHeader)); }

  // Runs `body` in a child; returns its wait status.
  template <typename F>
  int InChild(F body) {
    pid_t pid = fork();
    if (pid == 0) {
      body();
      _exit(0);
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return status;
  }

  format::ExitState Marker() const { return format::DecodeExitState(g_header->exit_state.load()); }
};

TEST_F(ExitMarkerTest, FatalSignalIsMarkedAndStillKills) {
  const int status = InChild([] {
    ASSERT_TRUE(InstallFatalSignalMarkers(&Header));
    raise(SIGABRT);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(Marker().kind, format::ExitKind::kSignal);
  EXPECT_EQ(Marker().value, SIGABRT);
}

void Survive(int) {}

TEST_F(ExitMarkerTest, ApplicationHandlerRunsAndASurvivedSignalLeavesNoMarker) {
  const int status = InChild([] {
    signal(SIGILL, &Survive);
    ASSERT_TRUE(InstallFatalSignalMarkers(&Header));
    raise(SIGILL);  // the application's handler returns: the process lives on
    _exit(7);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(Marker().kind, format::ExitKind::kNone);
}

TEST_F(ExitMarkerTest, IgnoredSignalStaysIgnored) {
  const int status = InChild([] {
    signal(SIGABRT, SIG_IGN);
    ASSERT_TRUE(InstallFatalSignalMarkers(&Header));
    raise(SIGABRT);
    _exit(5);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 5);
  EXPECT_EQ(Marker().kind, format::ExitKind::kNone);
}

TEST_F(ExitMarkerTest, CleanExitKeepsTheLowByteOfTheStatus) {
  MarkExited(g_header, 3);
  EXPECT_EQ(Marker().kind, format::ExitKind::kExited);
  EXPECT_EQ(Marker().value, 3);
  MarkExited(g_header, 256 + 9);
  EXPECT_EQ(Marker().value, 9);
  MarkExited(nullptr, 1);  // no ring yet: nothing to do
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

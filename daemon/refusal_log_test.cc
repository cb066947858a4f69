#include "daemon/refusal_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "daemon/test_util.h"

namespace xtimer {
namespace daemon {
namespace {

// Runs `f` with stderr (where Logf writes) sent to a file; returns what was written.
template <typename F>
std::string CaptureLog(F f) {
  const std::string dir = testing::MakeTempDir("refusal_log_test");
  const std::string path = dir + "/log";
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  const int saved = dup(2);
  dup2(fd, 2);
  f();
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::string out = testing::ReadFile(path);
  testing::RemoveTree(dir);
  return out;
}

size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(RefusalLogTest, CountsEveryRefusalByCause) {
  RefusalLog log("registration");
  CaptureLog([&] {
    for (int i = 0; i < 5; ++i) log.Refuse("pid_cap", "pid 7");
    log.Refuse("uid_cap", "uid 1000");
  });
  EXPECT_EQ(log.count("pid_cap"), 5u);
  EXPECT_EQ(log.count("uid_cap"), 1u);
  EXPECT_EQ(log.count("global_cap"), 0u);
  const auto counts = log.counts();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts.at("pid_cap"), 5u);
}

TEST(RefusalLogTest, LogsOncePerCauseAndPeer) {
  RefusalLog log("registration");
  const std::string out = CaptureLog([&] {
    for (int i = 0; i < 100; ++i) log.Refuse("pid_cap", "pid 7");
    for (int i = 0; i < 100; ++i) log.Refuse("pid_cap", "pid 8");
    for (int i = 0; i < 100; ++i) log.Refuse("uid_cap", "pid 8");
  });
  EXPECT_EQ(CountLines(out), 3u) << out;
  EXPECT_NE(out.find("registration refused (pid_cap) from pid 7"), std::string::npos) << out;
  EXPECT_NE(out.find("registration refused (uid_cap) from pid 8"), std::string::npos) << out;
}

TEST(RefusalLogTest, ManyPeersShareABoundedSetOfEntries) {
  RefusalLog log("registration");
  const std::string out = CaptureLog([&] {
    for (size_t i = 0; i < RefusalLog::kMaxKeys + 500; ++i) {
      log.Refuse("pid_cap", "pid " + std::to_string(i));
    }
  });
  // One line per remembered peer, then one for all the others together.
  EXPECT_EQ(CountLines(out), RefusalLog::kMaxKeys + 1);
  EXPECT_NE(out.find("(other peers)"), std::string::npos);
  EXPECT_EQ(log.count("pid_cap"), RefusalLog::kMaxKeys + 500);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

#include "daemon/base/refusal_log.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

TEST(RefusalLogTest, OneLinePerCauseAndPeerPerIntervalWithSuppressedCount) {
  int64_t now = 1000;
  std::vector<std::string> lines;
  RefusalLog log("control port", [&] { return now; },
                 [&](const std::string& l) { lines.push_back(l); });
  for (int i = 0; i < 5; ++i) log.Refuse("idle_timeout", "127.0.0.1");
  log.Refuse("idle_timeout", "10.0.0.2");
  log.Refuse("peer_limit", "127.0.0.1");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "control port: refused 127.0.0.1: idle_timeout");
  now += RefusalLog::kIntervalNs - 1;
  log.Refuse("idle_timeout", "127.0.0.1");
  EXPECT_EQ(lines.size(), 3u);
  now += 1;
  log.Refuse("idle_timeout", "127.0.0.1");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[3].find("and 5 more"), std::string::npos) << lines[3];
  EXPECT_EQ(log.count("idle_timeout"), 8u);
  EXPECT_EQ(log.count("peer_limit"), 1u);
  EXPECT_EQ(log.count("never"), 0u);
  EXPECT_EQ(log.counts().size(), 2u);
}

TEST(RefusalLogTest, ManyDistinctPeersStayBounded) {
  int64_t now = 0;
  size_t lines = 0;
  RefusalLog log("x", [&] { return now; }, [&](const std::string&) { ++lines; });
  for (int i = 0; i < 20000; ++i) log.Refuse("c", "peer" + std::to_string(i));
  EXPECT_EQ(log.count("c"), 20000u);
  EXPECT_GE(lines, 4096u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

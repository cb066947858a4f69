#include "cli/control_client.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace cli {
namespace {

std::string Tmp() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = Tmp() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ControlTargetsTest, HostsAndFileWithDefaultPorts) {
  unsetenv("XTIMER_CONTROL_PORT");
  const std::string file = WriteFile("hosts", "node2  # a comment\n\n[::1]:7 node3:9\n");
  std::vector<std::string> t;
  std::string error;
  ASSERT_TRUE(ControlTargets({"node0,node1:5"}, file, &t, &error)) << error;
  EXPECT_EQ(t, (std::vector<std::string>{"node0:18888", "node1:5", "node2:18888", "[::1]:7",
                                         "node3:9"}));
  ASSERT_TRUE(ControlTargets({}, "", &t, &error)) << error;
  EXPECT_EQ(t, std::vector<std::string>{"127.0.0.1:18888"});
}

// A hosts file that names no host (empty, comments only, a directory) or --hosts of commas
// alone is an error, never the local daemon in their place.
TEST(ControlTargetsTest, NoHostWhereHostsWereGivenIsAnError) {
  std::vector<std::string> t;
  std::string error;
  const std::string empty = WriteFile("empty", "# only a comment\n\n");
  EXPECT_FALSE(ControlTargets({}, empty, &t, &error));
  EXPECT_EQ(error, "--hosts-file " + empty + " names no host (one host[:port] per line)");
  EXPECT_FALSE(ControlTargets({}, Tmp(), &t, &error));
  EXPECT_EQ(error, "cannot read --hosts-file " + Tmp());
  EXPECT_FALSE(ControlTargets({}, Tmp() + "/missing", &t, &error));
  EXPECT_EQ(error, "cannot read --hosts-file " + Tmp() + "/missing");
  EXPECT_FALSE(ControlTargets({","}, "", &t, &error));
  EXPECT_EQ(error, "--hosts names no host");
}

TEST(ControlTargetsTest, PortsOutOfRangeAreErrors) {
  std::vector<std::string> t;
  std::string error;
  for (const char* bad : {"node0:99999", "node0:0", "node0:", "node0:x1", "[::1]:65536"}) {
    EXPECT_FALSE(ControlTargets({bad}, "", &t, &error)) << bad;
    EXPECT_EQ(error.rfind("bad port in host ", 0), 0u) << error;
  }
  ASSERT_TRUE(ControlTargets({"node0:65535"}, "", &t, &error)) << error;
  setenv("XTIMER_CONTROL_PORT", "70000", 1);
  EXPECT_FALSE(ControlTargets({"node0"}, "", &t, &error));
  unsetenv("XTIMER_CONTROL_PORT");
}

}  // namespace
}  // namespace cli
}  // namespace xtimer

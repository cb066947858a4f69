#include "daemon/flags.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace xtimer {
namespace daemon {
namespace {

bool Parse(std::vector<const char*> args, const std::map<std::string, std::string>& env,
           Flags* f, std::string* error, uid_t euid = 0) {
  args.insert(args.begin(), "xtimerd");
  return ParseFlags(
      static_cast<int>(args.size()), args.data(),
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      f, error, euid);
}

TEST(FlagsTest, UserDefaultsCarryTheUid) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({}, {}, &f, &error, 1234)) << error;
  EXPECT_EQ(f.run_dir, "/tmp/xtimer-1234");
  EXPECT_EQ(f.socket, "/tmp/xtimer-1234/xtimerd.sock");
  EXPECT_EQ(f.dump_root, "/tmp/xtimer-dumps-1234");
  Flags g;
  ASSERT_TRUE(Parse({"--run-dir", "/srv/x", "--dump-root", "/srv/d"}, {}, &g, &error, 1234));
  EXPECT_EQ(g.run_dir, "/srv/x");
  EXPECT_EQ(g.dump_root, "/srv/d");
}

TEST(FlagsTest, Defaults) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({}, {}, &f, &error)) << error;
  // Root's defaults stay out of world-writable /tmp (docs/security.md).
  EXPECT_EQ(f.run_dir, "/run/xtimer");
  EXPECT_EQ(f.socket, "/run/xtimer/xtimerd.sock");
  EXPECT_EQ(f.dump_root, "/var/lib/xtimer/dumps");
  EXPECT_EQ(f.metrics_port, 18889);
  EXPECT_EQ(f.metrics_address, "127.0.0.1");
  EXPECT_EQ(f.control_port, 18888);
  EXPECT_EQ(f.hang_timeout_s, 300);
  EXPECT_EQ(f.window_s, 60);
  EXPECT_EQ(f.history, 100000);
  EXPECT_FALSE(f.daemonize);
  EXPECT_EQ(f.exit_when_idle_s, -1);
  EXPECT_EQ(f.exited_grace_s, 600);
  EXPECT_EQ(f.exited_max, 64);
  EXPECT_EQ(f.exited_memory_mb, 1024);
}

TEST(FlagsTest, ExitedProcessBounds) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({"--exited-grace=0", "--exited-max", "3"}, {{"XTIMER_EXITED_MEMORY_MB", "16"}},
                    &f, &error))
      << error;
  EXPECT_EQ(f.exited_grace_s, 0);
  EXPECT_EQ(f.exited_max, 3);
  EXPECT_EQ(f.exited_memory_mb, 16);
  EXPECT_FALSE(Parse({"--exited-grace=-1"}, {}, &f, &error));
  EXPECT_NE(error.find("--exited-grace"), std::string::npos) << error;
  EXPECT_FALSE(Parse({}, {{"XTIMER_EXITED_MEMORY_MB", "0"}}, &f, &error));
  EXPECT_NE(error.find("XTIMER_EXITED_MEMORY_MB"), std::string::npos) << error;
}

TEST(FlagsTest, ControlPortLimits) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({}, {}, &f, &error)) << error;
  EXPECT_EQ(f.control_idle_timeout_s, 5);
  EXPECT_EQ(f.control_request_timeout_s, 10);
  EXPECT_EQ(f.control_max_connections, 512);
  EXPECT_EQ(f.control_max_per_peer, 256);
  ASSERT_TRUE(Parse({"--control-idle-timeout=2", "--control-max-connections", "64"},
                    {{"XTIMER_CONTROL_REQUEST_TIMEOUT", "3"}, {"XTIMER_CONTROL_MAX_PER_PEER", "8"}},
                    &f, &error))
      << error;
  EXPECT_EQ(f.control_idle_timeout_s, 2);
  EXPECT_EQ(f.control_request_timeout_s, 3);
  EXPECT_EQ(f.control_max_connections, 64);
  EXPECT_EQ(f.control_max_per_peer, 8);
  EXPECT_FALSE(Parse({"--control-max-connections-per-peer=0"}, {}, &f, &error));
  EXPECT_NE(error.find("--control-max-connections-per-peer"), std::string::npos) << error;
}

TEST(FlagsTest, EnvironmentThenCommandLine) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({"--metrics-port=9000", "--hang-timeout", "30", "--daemonize", "--once", "5"},
                    {{"XTIMER_RUN_DIR", "/r"},
                     {"XTIMER_METRICS_PORT", "1234"},
                     {"XTIMER_CONTROL_PORT", "4321"},
                     {"XTIMER_HISTORY", "7"}},
                    &f, &error))
      << error;
  EXPECT_EQ(f.run_dir, "/r");
  EXPECT_EQ(f.socket, "/r/xtimerd.sock");
  EXPECT_EQ(f.metrics_port, 9000);
  EXPECT_EQ(f.control_port, 4321);
  EXPECT_EQ(f.hang_timeout_s, 30);
  EXPECT_EQ(f.history, 7);
  EXPECT_TRUE(f.daemonize);
  EXPECT_EQ(f.exit_when_idle_s, 5);
}

TEST(FlagsTest, KernelMetricsTopIsOffByDefaultAndBounded) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({}, {}, &f, &error)) << error;
  EXPECT_EQ(f.kernel_metrics_top, 0);
  Flags g;
  ASSERT_TRUE(Parse({"--kernel-metrics-top=5"}, {}, &g, &error)) << error;
  EXPECT_EQ(g.kernel_metrics_top, 5);
  Flags h;
  EXPECT_FALSE(Parse({}, {{"XTIMER_KERNEL_METRICS_TOP", "1000"}}, &h, &error));
  EXPECT_NE(error.find("XTIMER_KERNEL_METRICS_TOP"), std::string::npos) << error;
}

TEST(FlagsTest, ErrorsNameTheFlagOrVariable) {
  Flags f;
  std::string error;
  EXPECT_FALSE(Parse({"--metrics-port=70000"}, {}, &f, &error));
  EXPECT_NE(error.find("--metrics-port"), std::string::npos) << error;
  EXPECT_FALSE(Parse({}, {{"XTIMER_HANG_TIMEOUT", "soon"}}, &f, &error));
  EXPECT_NE(error.find("XTIMER_HANG_TIMEOUT"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--bogus"}, {}, &f, &error));
  EXPECT_NE(error.find("--bogus"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--window"}, {}, &f, &error));
  EXPECT_NE(error.find("needs a value"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--daemonize=maybe"}, {}, &f, &error));
}

TEST(FlagsTest, MetricsPortLimits) {
  Flags f;
  std::string error;
  EXPECT_EQ(f.metrics_max_connections, 256);
  EXPECT_EQ(f.metrics_request_timeout_ms, 5000);
  ASSERT_TRUE(Parse({"--metrics-request-timeout-ms=2000"},
                    {{"XTIMER_METRICS_MAX_CONNECTIONS", "64"},
                     {"XTIMER_METRICS_REQUEST_TIMEOUT_MS", "900"}},
                    &f, &error))
      << error;
  EXPECT_EQ(f.metrics_max_connections, 64);
  EXPECT_EQ(f.metrics_request_timeout_ms, 2000);
  EXPECT_FALSE(Parse({"--metrics-max-connections=0"}, {}, &f, &error));
  EXPECT_NE(error.find("--metrics-max-connections"), std::string::npos) << error;
  EXPECT_FALSE(Parse({}, {{"XTIMER_METRICS_REQUEST_TIMEOUT_MS", "10"}}, &f, &error));
  EXPECT_NE(error.find("XTIMER_METRICS_REQUEST_TIMEOUT_MS"), std::string::npos) << error;
}

TEST(FlagsTest, SocketModeAndGroup) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({}, {}, &f, &error)) << error;
  EXPECT_EQ(f.socket_mode, 0666);
  EXPECT_EQ(f.socket_group, "");
  ASSERT_TRUE(Parse({"--socket-mode", "0660", "--socket-group=train"}, {}, &f, &error)) << error;
  EXPECT_EQ(f.socket_mode, 0660);
  EXPECT_EQ(f.socket_group, "train");
  ASSERT_TRUE(Parse({}, {{"XTIMER_SOCKET_MODE", "600"}}, &f, &error)) << error;
  EXPECT_EQ(f.socket_mode, 0600);
  EXPECT_FALSE(Parse({"--socket-mode=0999"}, {}, &f, &error));
  EXPECT_NE(error.find("--socket-mode must be an octal mode"), std::string::npos) << error;
  EXPECT_FALSE(Parse({"--socket-mode=01777"}, {}, &f, &error));
}

TEST(FlagsTest, OpLogFlagsAndVariables) {
  Flags f;
  std::string error;
  ASSERT_TRUE(Parse({"--op-log=csv", "--op-log-sample", "0.1", "--op-log-ranks=0,2-3"},
                    {{"XTIMER_OP_LOG_MAX_MB", "10"}, {"XTIMER_OP_LOG_ANOMALY_FACTOR", "4"}}, &f,
                    &error))
      << error;
  EXPECT_EQ(f.op_log.mode, "csv");
  EXPECT_EQ(f.op_log.sample, "0.1");
  EXPECT_EQ(f.op_log.ranks, "0,2-3");
  EXPECT_EQ(f.op_log.max_mb, 10);
  EXPECT_EQ(f.op_log.anomaly_factor, "4");
  EXPECT_EQ(f.op_log.flush_ms, 1000);
  EXPECT_FALSE(Parse({"--op-log-flush-ms=5"}, {}, &f, &error));
  EXPECT_NE(error.find("--op-log-flush-ms must be a number from 10 to 600000"),
            std::string::npos)
      << error;
  EXPECT_NE(Usage().find("XTIMER_OP_LOG_ROTATE_MB"), std::string::npos);
}

TEST(FlagsTest, UsageListsEveryFlagAndVariable) {
  std::string u = Usage();
  for (const char* s :
       {"--run-dir", "--socket", "--metrics-port", "--metrics-address", "--control-port",
        "--hang-timeout", "--window", "--history", "--daemonize", "--log-file", "--exit-when-idle",
        "--once", "XTIMER_RUN_DIR", "XTIMER_DAEMON_SOCKET", "XTIMER_METRICS_PORT",
        "XTIMER_HANG_TIMEOUT", "XTIMER_CONTROL_PORT", "--metrics-max-connections",
        "XTIMER_METRICS_MAX_CONNECTIONS", "--metrics-request-timeout-ms",
        "XTIMER_METRICS_REQUEST_TIMEOUT_MS", "--socket-mode", "XTIMER_SOCKET_MODE",
        "--socket-group", "XTIMER_SOCKET_GROUP", "--control-allow-remote",
        "XTIMER_CONTROL_ALLOW_REMOTE", "--kernel-metrics-top", "XTIMER_KERNEL_METRICS_TOP"}) {
    EXPECT_NE(u.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

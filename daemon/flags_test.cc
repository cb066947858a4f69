#include "daemon/flags.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace xtimer {
namespace daemon {
namespace {

bool Parse(std::vector<const char*> args, const std::map<std::string, std::string>& env, Flags* f,
           std::string* error, uid_t euid = 0) {
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
  ASSERT_TRUE(Parse(
      {"--metrics-request-timeout-ms=2000"},
      {{"XTIMER_METRICS_MAX_CONNECTIONS", "64"}, {"XTIMER_METRICS_REQUEST_TIMEOUT_MS", "900"}}, &f,
      &error))
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
  EXPECT_NE(error.find("--op-log-flush-ms must be a number from 10 to 600000"), std::string::npos)
      << error;
  EXPECT_NE(Usage().find("XTIMER_OP_LOG_ROTATE_MB"), std::string::npos);
}

TEST(FlagsTest, UsageListsEveryFlagAndVariable) {
  std::string u = Usage();
  for (const char* s : {"--run-dir",
                        "--socket",
                        "--metrics-port",
                        "--metrics-address",
                        "--control-port",
                        "--hang-timeout",
                        "--window",
                        "--history",
                        "--daemonize",
                        "--log-file",
                        "--exit-when-idle",
                        "--once",
                        "XTIMER_RUN_DIR",
                        "XTIMER_DAEMON_SOCKET",
                        "XTIMER_METRICS_PORT",
                        "XTIMER_HANG_TIMEOUT",
                        "XTIMER_CONTROL_PORT",
                        "--metrics-max-connections",
                        "XTIMER_METRICS_MAX_CONNECTIONS",
                        "--metrics-request-timeout-ms",
                        "XTIMER_METRICS_REQUEST_TIMEOUT_MS",
                        "--socket-mode",
                        "XTIMER_SOCKET_MODE",
                        "--socket-group",
                        "XTIMER_SOCKET_GROUP",
                        "--control-allow-remote",
                        "XTIMER_CONTROL_ALLOW_REMOTE",
                        "--kernel-metrics-top",
                        "XTIMER_KERNEL_METRICS_TOP"}) {
    EXPECT_NE(u.find(s), std::string::npos) << s;
  }
}

// The text after "(default " up to a space, ';', ':', ',' or ')': "300" in "(default 300)".
std::string DefaultToken(const std::string& text) {
  std::string token;
  for (char c : text) {
    if (c == ' ' || c == ';' || c == ':' || c == ',' || c == ')') break;
    if (c != '`') token += c;
  }
  return token;
}

// --help's flags: each spelling -> the default its line shows ("" when it shows none).
std::map<std::string, std::string> HelpDefaults() {
  std::map<std::string, std::string> out;
  std::istringstream lines(Usage());
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  -", 0) != 0) continue;
    std::istringstream words(line);
    std::vector<std::string> names;
    std::string word;
    while (words >> word && word[0] == '-') {
      if (word.back() == ',') word.pop_back();
      names.push_back(word);
    }
    const size_t at = line.find("(default ");
    const std::string value = at == std::string::npos ? "" : DefaultToken(line.substr(at + 9));
    for (const std::string& name : names) out[name] = value;
  }
  return out;
}

// Splits a Markdown table row into its cells, trimmed.
std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] != '|') {
      cell += row[i];
      continue;
    }
    const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    cell.clear();
  }
  return cells;
}

// docs/daemon.md's flag table: each spelling in a row's first cell -> that row's default cell
// (the matching item where the cell lists one default per flag, "64, 1024"; else the whole cell).
std::map<std::string, std::string> DocDefaults() {
  std::ifstream in("docs/daemon.md");
  EXPECT_TRUE(in.good()) << "docs/daemon.md is not in the test's runfiles";
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `-", 0) != 0) continue;
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 3) continue;
    std::vector<std::string> names, defaults;
    for (size_t at = cells[0].find('`'); at != std::string::npos;
         at = cells[0].find('`', cells[0].find('`', at + 1) + 1)) {
      const std::string code = cells[0].substr(at + 1, cells[0].find('`', at + 1) - at - 1);
      names.push_back(code.substr(0, code.find_first_of(" [=")));
    }
    std::istringstream items(cells[2]);
    for (std::string item; std::getline(items, item, ',');) {
      defaults.push_back(DefaultToken(item.substr(item.find_first_not_of(' '))));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      out[names[i]] = defaults.size() == names.size() ? defaults[i] : DefaultToken(cells[2]);
    }
  }
  return out;
}

TEST(FlagsTest, HelpShowsTheComponentsDefaults) {
  constexpr int64_t kS = 1000000000;
  const AggregatorOptions ao;
  const DiagnosisOptions dio;
  const ControlLimits cl;
  const MetricsServerOptions mo;
  const RingServerOptions so;
  const OpLogOptions oo;
  const std::map<std::string, int64_t> want = {
      {"--hang-timeout", dio.hang_timeout_ns / kS},
      {"--hang-min-seconds", dio.min_hang_ns / kS},
      {"--hang-early-seconds", dio.early_hang_ns / kS},
      {"--hang-cadence-factor", static_cast<int64_t>(dio.cadence_factor)},
      {"--control-idle-timeout", cl.idle_timeout_ms / 1000},
      {"--control-request-timeout", cl.request_timeout_ms / 1000},
      {"--control-max-connections", static_cast<int64_t>(cl.max_connections)},
      {"--control-max-connections-per-peer", static_cast<int64_t>(cl.max_connections_per_peer)},
      {"--metrics-max-connections", mo.max_connections},
      {"--metrics-request-timeout-ms", mo.request_timeout_ms},
      {"--window", ao.window_ns / kS},
      {"--window-samples", static_cast<int64_t>(ao.window_samples)},
      {"--history", static_cast<int64_t>(ao.history)},
      {"--stale-timeout", ao.stale_heartbeat_ns / kS},
      {"--exited-grace", ao.exited_grace_ns / kS},
      {"--exited-max", static_cast<int64_t>(ao.max_exited)},
      {"--exited-memory-mb", static_cast<int64_t>(ao.max_exited_bytes >> 20)},
      {"--memory-budget-mb", static_cast<int64_t>(ao.memory_budget_bytes >> 20)},
      {"--process-memory-mb", static_cast<int64_t>(ao.max_process_bytes >> 20)},
      {"--max-registrations", static_cast<int64_t>(so.max_connections)},
      {"--max-registrations-per-uid", static_cast<int64_t>(so.max_per_uid)},
      {"--max-registrations-per-pid", static_cast<int64_t>(so.max_per_pid)},
      {"--registration-reserve", static_cast<int64_t>(so.reserve)},
      {"--register-timeout-ms", so.register_timeout_ms},
      {"--max-ring-mb", static_cast<int64_t>(so.max_ring_bytes >> 20)},
      {"--poll-interval-ms", so.poll_interval_ms},
      {"--op-log-seed", static_cast<int64_t>(oo.seed)},
      {"--op-log-rotate-mb", static_cast<int64_t>(oo.files.rotate_bytes >> 20)},
      {"--op-log-max-mb", static_cast<int64_t>(oo.files.max_total_bytes >> 20)},
      {"--op-log-flush-ms", oo.flush_ms},
  };
  const std::map<std::string, std::string> help = HelpDefaults();
  for (const auto& w : want) {
    ASSERT_EQ(help.count(w.first), 1u) << w.first << " is not in --help";
    EXPECT_EQ(help.at(w.first), std::to_string(w.second)) << w.first;
  }
  EXPECT_EQ(help.at("--metrics-address"), mo.address);
  EXPECT_EQ(help.at("--socket-mode"), "0666");
  EXPECT_EQ(so.socket_mode, 0666);
  // What parsing nothing gives is what --help says.
  Flags f;
  std::string error;
  ASSERT_TRUE(ParseFlags(
      1, std::vector<const char*>{"xtimerd"}.data(),
      [](const char*) -> const char* { return nullptr; }, &f, &error, 0));
  EXPECT_EQ(std::to_string(f.hang_timeout_s), help.at("--hang-timeout"));
  EXPECT_EQ(DiagnosisOptionsOf(f).hang_timeout_ns, dio.hang_timeout_ns);
  EXPECT_EQ(AggregatorOptionsOf(f).memory_budget_bytes, ao.memory_budget_bytes);
  EXPECT_EQ(ControlLimitsOf(f).idle_timeout_ms, cl.idle_timeout_ms);
  EXPECT_EQ(MetricsServerOptionsOf(f).request_timeout_ms, mo.request_timeout_ms);
  EXPECT_EQ(RingServerOptionsOf(f).max_ring_bytes, so.max_ring_bytes);
}

TEST(FlagsTest, EveryFlagInHelpHasItsRowInTheDocsWithTheSameDefault) {
  const std::map<std::string, std::string> docs = DocDefaults();
  const std::map<std::string, std::string> help = HelpDefaults();
  EXPECT_GT(help.size(), 50u);
  for (const auto& h : help) {
    ASSERT_EQ(docs.count(h.first), 1u) << h.first << " has no row in docs/daemon.md";
    if (!h.second.empty() && docs.at(h.first) != "all") {
      EXPECT_EQ(docs.at(h.first), h.second) << h.first << ": docs/daemon.md vs --help";
    }
  }
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

// A real Prometheus server (Debian's /usr/bin/prometheus, loopback only) scrapes two xtimerd
// instances on different ports and run directories, as the daemons of two emulated nodes, and
// its HTTP API shows both targets up with xtimer samples from each.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "daemon/base/test_util.h"
#include "format/registration.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {
namespace {

using testing::HttpGet;

struct Node {
  std::string dir;
  int port = 0;
  pid_t pid = -1;
  std::optional<format::RingWriter> writer;
  int fd = -1;
};

// The single value of an instant-vector query such as count(...), or "" when there is none.
std::string QueryValue(int port, const std::string& encoded_query) {
  int status = 0;
  std::string body = HttpGet(port, "/api/v1/query?query=" + encoded_query, &status);
  if (status != 200) return "";
  // {"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[T,"V"]}]}}
  size_t v = body.find("\"value\":[");
  if (v == std::string::npos) return "";
  size_t q1 = body.find('"', body.find(',', v));
  size_t q2 = body.find('"', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return "";
  return body.substr(q1 + 1, q2 - q1 - 1);
}

TEST(PrometheusTest, ScrapesTwoDaemons) {
  if (access("/usr/bin/prometheus", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/prometheus";
  const std::string binary = testing::RunfilesPath("daemon/xtimerd");
  const std::string root = testing::MakeTempDir("prometheus_test");
  setenv("XTIMER_DUMP_ROOT", (root + "/dumps").c_str(), 1);  // root's default is outside the sandbox
  ASSERT_FALSE(root.empty());
  Node nodes[2];
  for (int i = 0; i < 2; ++i) {
    Node& n = nodes[i];
    n.dir = root + "/node" + std::to_string(i);
    n.port = testing::FreePort();
    n.pid = testing::Spawn({binary, "--run-dir=" + n.dir, "--metrics-port=" + std::to_string(n.port), "--control-port=0"},
                           root + "/xtimerd" + std::to_string(i) + ".log");
  }
  for (int i = 0; i < 2; ++i) {
    Node& n = nodes[i];
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          int status = 0;
          HttpGet(n.port, "/metrics", &status);
          struct stat st;
          return status == 200 && stat((n.dir + "/xtimerd.sock").c_str(), &st) == 0;
        },
        20000));
    format::Identity id;
    id.job = "train";
    id.host = "node-" + std::to_string(i);
    id.rank = i;
    id.local_rank = 0;
    id.world_size = 2;
    std::string error;
    n.writer = format::RingWriter::Create(256, id, &error);
    ASSERT_TRUE(n.writer.has_value()) << error;
    n.fd = format::ConnectToDaemon(n.dir + "/xtimerd.sock", &error);
    ASSERT_GE(n.fd, 0) << error;
    ASSERT_TRUE(format::SendRing(n.fd, n.writer->fd(), &error)) << error;
    auto op = testing::MakeOp(format::Operation::kAllReduce, format::DType::kF32, 1000);
    op.op.count = 256;
    op.op.bytes = 1024;
    op.op.comm_size = 2;
    op.op.comm_id = 42;
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(n.writer->Write(op));
  }

  const int prom_port = testing::FreePort();
  const std::string config = root + "/prometheus.yml";
  {
    std::ofstream f(config);
    f << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: xtimer\n    honor_labels: true\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << nodes[0].port << "', '127.0.0.1:"
      << nodes[1].port << "']\n";
  }
  const std::string prom_log = root + "/prometheus.log";
  pid_t prom = testing::Spawn(
      {"/usr/bin/prometheus", "--config.file=" + config, "--storage.tsdb.path=" + root + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      prom_log);
  // count(up == 1) and the number of hosts with an xtimer series, from Prometheus's API.
  std::string up, hosts, registered;
  bool ok = testing::WaitFor(
      [&] {
        up = QueryValue(prom_port, "count(up%7Bjob%3D%22xtimer%22%7D%3D%3D1)");
        hosts = QueryValue(prom_port, "count(count%20by%20(host)(xtimer_ops_total))");
        registered = QueryValue(prom_port, "sum(xtimer_processes_registered)");
        return up == "2" && hosts == "2" && registered == "2";
      },
      60000);
  EXPECT_TRUE(ok) << "up=" << up << " hosts=" << hosts << " registered=" << registered << "\n"
                  << testing::ReadFile(prom_log);
  EXPECT_EQ(QueryValue(prom_port, "sum(xtimer_ops_total%7Bjob%3D%22train%22%7D)"), "10");

  kill(prom, SIGTERM);
  if (testing::WaitExit(prom, 20000) < 0) {
    kill(prom, SIGKILL);
    testing::WaitExit(prom, 5000);
  }
  for (Node& n : nodes) {
    close(n.fd);
    kill(n.pid, SIGTERM);
    EXPECT_EQ(testing::WaitExit(n.pid, 10000), 0);
  }
  testing::RemoveTree(root);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

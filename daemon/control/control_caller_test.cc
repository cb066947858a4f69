#include "daemon/control/control_caller.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "daemon/base/test_util.h"

namespace xtimer {
namespace daemon {
namespace {

sockaddr_storage V4(const char* ip, uint16_t port) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  inet_pton(AF_INET, ip, &a->sin_addr);
  return ss;
}

TEST(ControlCallerTest, FindsTheUidOfARealLoopbackClient) {
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_storage sa = V4("127.0.0.1", 0);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&sa), sizeof(sockaddr_in)), 0);
  ASSERT_EQ(listen(server, 1), 0);
  socklen_t len = sizeof sa;
  getsockname(server, reinterpret_cast<sockaddr*>(&sa), &len);
  const uint16_t port = ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof(sockaddr_in)), 0);
  const int accepted = accept(server, nullptr, nullptr);
  sockaddr_storage peer{};
  len = sizeof peer;
  ASSERT_EQ(getpeername(accepted, reinterpret_cast<sockaddr*>(&peer), &len), 0);
  EXPECT_EQ(LocalTcpOwner(peer, port), static_cast<int64_t>(geteuid()));
  const Caller c = CallerOf(peer, port, /*allow_remote=*/false);
  EXPECT_FALSE(c.remote);
  EXPECT_EQ(c.uid, geteuid());
  EXPECT_TRUE(c.privileged);  // the daemon's own uid
  close(accepted);
  close(client);
  close(server);
}

// The kernel's table, as /proc/net/tcp and tcp6 print it, in a fake proc root.
TEST(ControlCallerTest, ReadsTheKernelsSocketTables) {
  const std::string proc = testing::MakeTempDir("caller");
  ASSERT_EQ(mkdir((proc + "/net").c_str(), 0755), 0);
  std::ofstream(proc + "/net/tcp")
      << "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
         "timeout inode\n"
         "   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534 "
         "       0 1234 1 0000000000000000 20 4 30 10 -1\n"
         "   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0 "
         "       0 1235 1 0000000000000000 20 4 30 10 -1\n";
  std::ofstream(proc + "/net/tcp6")
      << "  sl  local_address                         remote_address                        st "
         "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
         "   0: 00000000000000000000000001000000:9C41 00000000000000000000000001000000:1F90 01 "
         "00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 20 4 0 10 "
         "-1\n"
         "   1: 0000000000000000FFFF00000100007F:9C42 0000000000000000FFFF00000100007F:1F90 01 "
         "00000000:00000000 00:00000000 00000000  1001        0 98 1 0000000000000000 20 4 0 10 "
         "-1\n";
  // 127.0.0.1:40000 -> :8080 belongs to uid 65534 (not the server's own row, 8080 -> 40000).
  EXPECT_EQ(LocalTcpOwner(V4("127.0.0.1", 40000), 8080, proc), 65534);
  const Caller nobody = CallerOf(V4("127.0.0.1", 40000), 8080, false, proc);
  EXPECT_FALSE(nobody.privileged);
  EXPECT_EQ(nobody.uid, 65534u);
  // The same client towards another port, or another host: remote.
  EXPECT_EQ(LocalTcpOwner(V4("127.0.0.1", 40000), 8081, proc), -1);
  const Caller remote = CallerOf(V4("10.1.2.3", 40000), 8080, false, proc);
  EXPECT_TRUE(remote.remote);
  EXPECT_FALSE(remote.privileged);
  EXPECT_TRUE(CallerOf(V4("10.1.2.3", 40000), 8080, true, proc).privileged);
  // A dual-stack client socket: 127.0.0.1:40002 listed as ::ffff:127.0.0.1 in tcp6.
  EXPECT_EQ(LocalTcpOwner(V4("127.0.0.1", 40002), 8080, proc), 1001);
  // IPv6 ::1 port 40001.
  sockaddr_storage v6{};
  ASSERT_TRUE(ParseGrpcPeer("ipv6:%5B::1%5D:40001", &v6));
  EXPECT_EQ(LocalTcpOwner(v6, 8080, proc), 1000);
  testing::RemoveTree(proc);
}

TEST(ControlCallerTest, ParsesGrpcPeers) {
  sockaddr_storage ss{};
  ASSERT_TRUE(ParseGrpcPeer("ipv4:127.0.0.1:5000", &ss));
  EXPECT_EQ(ss.ss_family, AF_INET);
  EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port), 5000);
  ASSERT_TRUE(ParseGrpcPeer("ipv6:[::1]:6000", &ss));
  EXPECT_EQ(ss.ss_family, AF_INET6);
  EXPECT_FALSE(ParseGrpcPeer("unix:/tmp/x", &ss));
  EXPECT_FALSE(ParseGrpcPeer("ipv4:bogus:1", &ss));
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

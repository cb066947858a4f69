#include "daemon/control/control_caller.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace xtimer {
namespace daemon {
namespace {

// The kernel's spelling of an address in /proc/net/tcp{,6}: each 32-bit word of the address in
// network order, printed as a host-order integer, then the port.
std::string ProcAddress(const uint32_t* words, int nwords, uint16_t port) {
  std::string out;
  char buf[16];
  for (int i = 0; i < nwords; ++i) {
    snprintf(buf, sizeof buf, "%08X", words[i]);
    out += buf;
  }
  snprintf(buf, sizeof buf, ":%04X", port);
  return out + buf;
}

// The uid column of the row whose local address is `local` and whose remote port is `port`.
int64_t FindOwner(const std::string& table, const std::string& local, uint16_t port) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  char rem_port[8];
  snprintf(rem_port, sizeof rem_port, ":%04X", port);
  while (std::getline(in, line)) {
    char loc[64], rem[64];
    unsigned long uid = 0;
    // sl local rem st tx:rx tr:when retrnsmt uid
    if (sscanf(line.c_str(), "%*s %63s %63s %*s %*s %*s %*s %lu", loc, rem, &uid) != 3) continue;
    const std::string r = rem;
    if (local == loc && r.size() > 5 && r.compare(r.size() - 5, 5, rem_port) == 0) {
      return static_cast<int64_t>(uid);
    }
  }
  return -1;
}

}  // namespace

int64_t LocalTcpOwner(const sockaddr_storage& client, uint16_t server_port,
                      const std::string& proc) {
  if (client.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&client);
    const uint16_t port = ntohs(a->sin_port);
    const uint32_t mapped[4] = {0, 0, htonl(0xffff), a->sin_addr.s_addr};
    const int64_t uid = FindOwner(proc + "/net/tcp", ProcAddress(&mapped[3], 1, port), server_port);
    // A dual-stack client socket (gRPC's) lists its IPv4 address as ::ffff:a.b.c.d in tcp6.
    return uid >= 0 ? uid : FindOwner(proc + "/net/tcp6", ProcAddress(mapped, 4, port), server_port);
  }
  if (client.ss_family != AF_INET6) return -1;
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&client);
  uint32_t words[4];
  memcpy(words, &a->sin6_addr, sizeof words);
  const uint16_t port = ntohs(a->sin6_port);
  if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {  // an IPv4 client of a dual-stack listener
    const int64_t uid = FindOwner(proc + "/net/tcp", ProcAddress(&words[3], 1, port), server_port);
    if (uid >= 0) return uid;
  }
  return FindOwner(proc + "/net/tcp6", ProcAddress(words, 4, port), server_port);
}

Caller CallerOf(const sockaddr_storage& client, uint16_t server_port, bool allow_remote,
                const std::string& proc) {
  Caller c;
  const int64_t uid = LocalTcpOwner(client, server_port, proc);
  if (uid < 0) {
    c.remote = true;
    c.privileged = allow_remote;
    return c;
  }
  c.uid = static_cast<uint32_t>(uid);
  c.privileged = c.uid == 0 || c.uid == geteuid();
  return c;
}

bool ParseGrpcPeer(const std::string& text, sockaddr_storage* out) {
  memset(out, 0, sizeof *out);
  std::string peer;  // newer gRPC escapes the brackets: "ipv6:%5B::1%5D:5000"
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      peer += static_cast<char>(strtol(text.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      peer += text[i];
    }
  }
  const size_t colon = peer.rfind(':');
  if (colon == std::string::npos) return false;
  const int port = atoi(peer.c_str() + colon + 1);
  if (peer.compare(0, 5, "ipv4:") == 0) {
    auto* a = reinterpret_cast<sockaddr_in*>(out);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    return inet_pton(AF_INET, peer.substr(5, colon - 5).c_str(), &a->sin_addr) == 1;
  }
  if (peer.compare(0, 6, "ipv6:[") == 0 && colon > 7 && peer[colon - 1] == ']') {
    auto* a = reinterpret_cast<sockaddr_in6*>(out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    const std::string host = peer.substr(6, colon - 7);
    return inet_pton(AF_INET6, host.substr(0, host.find('%')).c_str(), &a->sin6_addr) == 1;
  }
  return false;
}

}  // namespace daemon
}  // namespace xtimer

#include "daemon/net/port_owner.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace xtimer {
namespace daemon {
namespace {

constexpr char kListen[] = "0A";  // TCP_LISTEN in /proc/net/tcp's "st" column

// Inodes of the sockets listening on `port` (IPv4 and IPv6).
std::set<std::string> ListeningInodes(int port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(table);
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      if (!(in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
            inode)) {
        continue;
      }
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos || state != kListen) continue;
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) inodes.insert(inode);
    }
  }
  return inodes;
}

std::string ProcessName(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/comm");
  std::string name;
  std::getline(f, name);
  return name;
}

// Whether binding address:port fails now, and why ("" when it would succeed).
std::string BindError(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0) {
    return "'" + address + "' is not a numeric IP address";
  }
  std::string error;
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) error = strerror(errno);
  if (fd >= 0) ::close(fd);
  freeaddrinfo(ai);
  return error;
}

}  // namespace

std::string PortOwner(int port) {
  const std::set<std::string> inodes = ListeningInodes(port);
  if (inodes.empty()) return "";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return "";
  std::string owner;
  while (dirent* e = readdir(proc)) {
    const std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // another user's process
    while (dirent* f = readdir(fds)) {
      char target[64] = {0};
      const std::string link = fd_dir + "/" + f->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 9 || std::strncmp(target, "socket:[", 8) != 0) continue;
      const std::string inode(target + 8, static_cast<size_t>(n) - 9);
      if (inodes.count(inode)) {
        owner = "pid " + pid + " (" + ProcessName(pid) + ")";
        break;
      }
    }
    closedir(fds);
    if (!owner.empty()) break;
  }
  closedir(proc);
  return owner;
}

std::string ExplainListenFailure(const std::string& what, const std::string& address, int port,
                                 const std::string& flag, const std::string& env,
                                 const std::string& detail) {
  const std::string where = what + " " + std::to_string(port) + " on " + address;
  const std::string how = "choose another port with " + flag + " N (" + env +
                          "; 0 picks a free one)";
  const std::string bind_error = port > 0 ? BindError(address, port) : "";
  std::string out;
  if (bind_error == strerror(EADDRINUSE)) {
    const std::string owner = PortOwner(port);
    out = where + " is already in use" + (owner.empty() ? "" : " by " + owner) +
          ": stop that process, or " + how;
  } else if (!bind_error.empty()) {
    out = "cannot listen on " + where + ": " + bind_error + "; " + how;
  } else {
    out = "cannot listen on " + where + "; " + how;
  }
  return out + " (" + detail + ")";
}

}  // namespace daemon
}  // namespace xtimer

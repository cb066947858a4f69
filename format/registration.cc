#include "format/registration.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/fd_passing.h"

namespace xtimer {
namespace format {
namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

bool Trusted(const std::vector<uint32_t>& trusted, uint32_t uid) {
  return std::find(trusted.begin(), trusted.end(), uid) != trusted.end();
}

std::string UidList(const std::vector<uint32_t>& trusted) {
  std::string out;
  for (uint32_t uid : trusted) out += (out.empty() ? "" : ", ") + std::to_string(uid);
  return out;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What is wrong with the socket file or its directory, or "".
std::string CheckOwners(const std::string& socket_path, const std::vector<uint32_t>& trusted) {
  struct stat st;
  if (lstat(socket_path.c_str(), &st) != 0) return Errno(("lstat " + socket_path).c_str());
  if (!S_ISSOCK(st.st_mode)) return socket_path + " is not a socket";
  if (!Trusted(trusted, st.st_uid)) {
    return socket_path + " belongs to uid " + std::to_string(st.st_uid);
  }
  const std::string dir = DirectoryOf(socket_path);
  if (lstat(dir.c_str(), &st) != 0) return Errno(("lstat " + dir).c_str());
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory (a symlink?)";
  if (!Trusted(trusted, st.st_uid)) return dir + " belongs to uid " + std::to_string(st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return dir + " is writable by other users and not sticky";
  }
  return "";
}

}  // namespace

std::vector<uint32_t> TrustedDaemonUids(int64_t daemon_uid) {
  std::vector<uint32_t> uids = {0};
  if (geteuid() != 0) uids.push_back(geteuid());
  if (daemon_uid >= 0 && !Trusted(uids, static_cast<uint32_t>(daemon_uid))) {
    uids.push_back(static_cast<uint32_t>(daemon_uid));
  }
  return uids;
}

bool CheckDaemonPeer(int socket_fd, const std::string& socket_path,
                     const std::vector<uint32_t>& trusted, std::string* error) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  std::string why;
  if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    why = Errno("SO_PEERCRED");
  } else if (!Trusted(trusted, cred.uid)) {
    why = "the daemon (pid " + std::to_string(cred.pid) + ") runs as uid " +
          std::to_string(cred.uid);
  } else {
    why = CheckOwners(socket_path, trusted);
  }
  if (why.empty()) return true;
  *error = "not registering with the daemon on " + socket_path + ": " + why +
           "; trusted uids are " + UidList(trusted) +
           " (root, this process's user, XTIMER_DAEMON_UID). This process runs on without the "
           "daemon; set XTIMER_DAEMON_UID to the daemon's uid if it is trusted, or point "
           "XTIMER_RUN_DIR at a directory that a trusted daemon owns";
  return false;
}

int ConnectToDaemon(const std::string& socket_path, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long: " + socket_path;
    return -1;
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  // Non-blocking: a daemon that is stopped or whose backlog is full makes connect fail with
  // EAGAIN at once instead of blocking the caller (and the process's exit) until it accepts.
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = Errno("socket");
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = Errno(("connect " + socket_path).c_str());
    close(fd);
    return -1;
  }
  return fd;
}

bool SendRing(int socket_fd, int ring_fd, std::string* error, const std::string& token) {
  if (token.size() > kMaxJobToken) {
    *error = "job token longer than " + std::to_string(kMaxJobToken) + " bytes";
    return false;
  }
  Hello hello{};
  hello.magic = kHelloMagic;
  hello.version = kHelloVersion;
  hello.pid = static_cast<int32_t>(getpid());
  hello.token_size = static_cast<uint32_t>(token.size());
  memcpy(hello.token, token.data(), token.size());
  return SendWithFd(socket_fd, &hello, sizeof(hello), ring_fd, error);
}

std::string HelloToken(const Hello& hello) {
  return std::string(hello.token, std::min<size_t>(hello.token_size, kMaxJobToken));
}

int ReceiveRing(int socket_fd, Hello* hello, std::string* error) {
  *hello = Hello{};
  int fd = -1;
  ssize_t n = ReceiveWithFd(socket_fd, hello, sizeof(*hello), 0, &fd, error);
  if (n < 0) return -1;
  auto reject = [&](const char* why) {
    if (fd >= 0) close(fd);
    *error = why;
    return -1;
  };
  if (n == 0) return reject("connection closed");
  if (n < static_cast<ssize_t>(kHelloV1Bytes)) return reject("short hello");
  if (hello->magic != kHelloMagic ||
      (hello->version != kHelloVersion && hello->version != kHelloVersionNoToken)) {
    return reject("bad hello magic or version");
  }
  const size_t want = hello->version == kHelloVersion ? sizeof(*hello) : kHelloV1Bytes;
  if (n != static_cast<ssize_t>(want)) return reject("short hello");
  if (hello->version == kHelloVersionNoToken) hello->token_size = 0;
  if (hello->token_size > kMaxJobToken) return reject("bad hello token size");
  if (fd < 0) return reject("expected exactly one file descriptor");
  return fd;
}

}  // namespace format
}  // namespace xtimer

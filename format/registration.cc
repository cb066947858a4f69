#include "format/registration.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xtimer {
namespace format {
namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

}  // namespace

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

bool SendRing(int socket_fd, int ring_fd, std::string* error) {
  Hello hello{kHelloMagic, kHelloVersion, static_cast<int32_t>(getpid()), 0};
  iovec iov{&hello, sizeof(hello)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &ring_fd, sizeof(int));
  ssize_t n;
  do {
    n = sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(hello))) {
    *error = n < 0 ? Errno("sendmsg") : "short sendmsg";
    return false;
  }
  return true;
}

int ReceiveRing(int socket_fd, Hello* hello, std::string* error) {
  iovec iov{hello, sizeof(*hello)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    *error = Errno("recvmsg");
    return -1;
  }
  int fds[4];
  int nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count && nfds < 4; ++i) {
        memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      }
    }
  }
  auto reject = [&](const char* why) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    *error = why;
    return -1;
  };
  if (n == 0) return reject("connection closed");
  if (n != static_cast<ssize_t>(sizeof(*hello))) return reject("short hello");
  if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) return reject("truncated message");
  if (hello->magic != kHelloMagic || hello->version != kHelloVersion) {
    return reject("bad hello magic or version");
  }
  if (nfds != 1) return reject("expected exactly one file descriptor");
  return fds[0];
}

}  // namespace format
}  // namespace xtimer

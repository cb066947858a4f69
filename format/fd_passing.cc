#include "format/fd_passing.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace xtimer {
namespace format {

ssize_t SendWithFdRaw(int socket_fd, const void* data, size_t n, int fd, int flags) {
  iovec iov{const_cast<void*>(data), n};
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
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(socket_fd, &msg, flags | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent;
}

bool SendWithFd(int socket_fd, const void* data, size_t n, int fd, std::string* error) {
  const ssize_t sent = SendWithFdRaw(socket_fd, data, n, fd, 0);
  if (sent != static_cast<ssize_t>(n)) {
    *error = sent < 0 ? std::string("sendmsg: ") + strerror(errno) : "short sendmsg";
    return false;
  }
  return true;
}

ssize_t ReceiveWithFd(int socket_fd, void* data, size_t n, int flags, int* fd,
                      std::string* error) {
  *fd = -1;
  iovec iov{data, n};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got;
  do {
    got = recvmsg(socket_fd, &msg, flags | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    *error = errno == EAGAIN || errno == EWOULDBLOCK ? "would block"
                                                     : std::string("recvmsg: ") + strerror(errno);
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
  const char* why = nullptr;
  if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) why = "truncated message";
  if (nfds > 1) why = "more than one file descriptor";
  if (why != nullptr) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    *error = why;
    return -1;
  }
  if (nfds == 1) *fd = fds[0];
  return got;
}

}  // namespace format
}  // namespace xtimer

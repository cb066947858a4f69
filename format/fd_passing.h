// One message with one file descriptor over a Unix stream socket (SCM_RIGHTS), for the ring
// registration and the stack replies.
#ifndef XTIMER_FORMAT_FD_PASSING_H_
#define XTIMER_FORMAT_FD_PASSING_H_

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace xtimer {
namespace format {

// Sends `n` bytes and `fd` in one sendmsg (MSG_NOSIGNAL, retried on EINTR). False with *error,
// also for a short send.
bool SendWithFd(int socket_fd, const void* data, size_t n, int fd, std::string* error);

// The same without allocating (async-signal-safe, for a crash handler): `flags` are added to
// MSG_NOSIGNAL. Returns sendmsg's result (-1 with errno).
ssize_t SendWithFdRaw(int socket_fd, const void* data, size_t n, int fd, int flags);

// Receives one message of at most `n` bytes into `data` (close-on-exec fds). Returns the bytes
// received (0 at EOF) or -1 with *error; *fd is the one fd it carried, or -1. A message with more
// than one fd, or truncated data or control, sets *error, closes every fd and returns -1.
ssize_t ReceiveWithFd(int socket_fd, void* data, size_t n, int flags, int* fd, std::string* error);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_FD_PASSING_H_

#include "format/stack_request.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "format/fd_passing.h"

namespace xtimer {
namespace format {

bool SendStackRequest(int socket_fd, uint64_t request_id, std::string* error) {
  const StackRequest request{kStackRequestMagic, kStackProtocolVersion, request_id};
  ssize_t n;
  do {
    n = send(socket_fd, &request, sizeof(request), MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(request))) {
    *error = n < 0 ? std::string("send: ") + strerror(errno) : "short send";
    return false;
  }
  return true;
}

bool ParseStackRequest(const void* data, size_t n, StackRequest* request, std::string* error) {
  if (n != sizeof(*request)) {
    *error = "stack request of " + std::to_string(n) + " bytes, expected " +
             std::to_string(sizeof(*request));
    return false;
  }
  memcpy(request, data, sizeof(*request));
  if (request->magic != kStackRequestMagic || request->version != kStackProtocolVersion) {
    *error = "bad stack request magic or version";
    return false;
  }
  return true;
}

bool SendStackReply(int socket_fd, uint64_t request_id, int memfd, uint64_t size,
                    std::string* error) {
  const StackReply reply{kStackReplyMagic, kStackProtocolVersion, request_id, size};
  return SendWithFd(socket_fd, &reply, sizeof(reply), memfd, error);
}

bool SendCrashReport(int socket_fd, int memfd, uint64_t size) {
  const StackReply reply{kStackReplyMagic, kStackProtocolVersion, kCrashReportId, size};
  return SendWithFdRaw(socket_fd, &reply, sizeof(reply), memfd, MSG_DONTWAIT) ==
         static_cast<ssize_t>(sizeof(reply));
}

bool AckCrashReport(int memfd) {
  const uint32_t ack = kCrashAckMagic;
  return pwrite(memfd, &ack, sizeof(ack), static_cast<off_t>(kCrashAckOffset)) ==
         static_cast<ssize_t>(sizeof(ack));
}

int ReceiveStackReply(int socket_fd, StackReply* reply, std::string* error) {
  *reply = StackReply{};
  int fd = -1;
  ssize_t n = ReceiveWithFd(socket_fd, reply, sizeof(*reply), MSG_DONTWAIT, &fd, error);
  if (n < 0) return -1;
  auto reject = [&](const std::string& why) {
    if (fd >= 0) close(fd);
    *error = why;
    return -1;
  };
  if (n == 0) return reject("connection closed");
  if (n != static_cast<ssize_t>(sizeof(*reply))) return reject("short stack reply");
  if (reply->magic != kStackReplyMagic || reply->version != kStackProtocolVersion) {
    return reject("bad stack reply magic or version");
  }
  if (reply->size > kMaxRawStacksBytes) {
    return reject("stack reply of " + std::to_string(reply->size) + " bytes, over the " +
                  std::to_string(kMaxRawStacksBytes) + " limit");
  }
  if (fd < 0) return reject("stack reply without its file descriptor");
  return fd;
}

bool ReadRawStacks(int memfd, uint64_t size, std::string* out, std::string* error) {
  struct stat st;
  if (fstat(memfd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < size) {
    *error = "stack reply's file is not a regular file of at least " + std::to_string(size) +
             " bytes";
    return false;
  }
  out->assign(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = pread(memfd, &(*out)[done], size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = n < 0 ? std::string("read stack reply: ") + strerror(errno)
                     : "stack reply's file ends early";
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace format
}  // namespace xtimer

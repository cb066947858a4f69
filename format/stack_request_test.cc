#include "format/stack_request.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "format/fd_passing.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace format {
namespace {

struct Pair {
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~Pair() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2];
};

bool SendWithFdForTest(int socket_fd, const StackReply& reply, int fd) {
  std::string error;
  return SendWithFd(socket_fd, &reply, sizeof(reply), fd, &error);
}

int MemfdWith(const std::string& text) {
  int fd = memfd_create("raw-stacks", MFD_CLOEXEC);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  return fd;
}

TEST(StackRequestTest, RequestRoundTrip) {
  Pair p;
  std::string error;
  ASSERT_TRUE(SendStackRequest(p.fds[0], 42, &error)) << error;
  char buf[64];
  ssize_t n = recv(p.fds[1], buf, sizeof(buf), 0);
  StackRequest request;
  ASSERT_TRUE(ParseStackRequest(buf, static_cast<size_t>(n), &request, &error)) << error;
  EXPECT_EQ(request.request_id, 42u);
  EXPECT_FALSE(ParseStackRequest(buf, 15, &request, &error));
  EXPECT_NE(error.find("15 bytes"), std::string::npos) << error;
  buf[0] ^= 1;
  EXPECT_FALSE(ParseStackRequest(buf, 16, &request, &error));
}

TEST(StackRequestTest, ReplyRoundTripReadsFromOffsetZero) {
  Pair p;
  const std::string text = "{\"format\": \"xtimer-raw-stacks\"}";
  int memfd = MemfdWith(text);  // its offset is at the end: the reader must not care
  std::string error;
  ASSERT_TRUE(SendStackReply(p.fds[1], 7, memfd, text.size(), &error)) << error;
  close(memfd);
  StackReply reply;
  int fd = ReceiveStackReply(p.fds[0], &reply, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(reply.request_id, 7u);
  std::string got;
  ASSERT_TRUE(ReadRawStacks(fd, reply.size, &got, &error)) << error;
  EXPECT_EQ(got, text);
  EXPECT_FALSE(ReadRawStacks(fd, reply.size + 1, &got, &error));
  close(fd);
  EXPECT_EQ(ReceiveStackReply(p.fds[0], &reply, &error), -1);
  EXPECT_EQ(error, "would block");
}

TEST(StackRequestTest, HostileRepliesAreRejected) {
  Pair p;
  std::string error;
  StackReply reply;
  // Over the size limit: refused, its fd closed.
  int memfd = MemfdWith("x");
  ASSERT_TRUE(SendStackReply(p.fds[1], 1, memfd, kMaxRawStacksBytes + 1, &error));
  EXPECT_EQ(ReceiveStackReply(p.fds[0], &reply, &error), -1);
  EXPECT_NE(error.find("over the"), std::string::npos) << error;
  // No fd.
  const StackReply bare{kStackReplyMagic, kStackProtocolVersion, 2, 1};
  ASSERT_EQ(send(p.fds[1], &bare, sizeof(bare), 0), static_cast<ssize_t>(sizeof(bare)));
  EXPECT_EQ(ReceiveStackReply(p.fds[0], &reply, &error), -1);
  EXPECT_NE(error.find("without its file descriptor"), std::string::npos) << error;
  // Wrong magic, with an fd.
  StackReply bad = bare;
  bad.magic = 0;
  ASSERT_TRUE(SendWithFdForTest(p.fds[1], bad, memfd));
  EXPECT_EQ(ReceiveStackReply(p.fds[0], &reply, &error), -1);
  EXPECT_NE(error.find("magic"), std::string::npos) << error;
  close(memfd);
  // EOF.
  close(p.fds[1]);
  p.fds[1] = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(ReceiveStackReply(p.fds[0], &reply, &error), -1);
  EXPECT_EQ(error, "connection closed");
}

}  // namespace
}  // namespace format
}  // namespace xtimer

#include "format/registration.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "format/ring.h"

namespace xtimer {
namespace format {
namespace {

// A listening socket in a fresh directory under /tmp (socket paths are short).
class Listener {
 public:
  Listener() {
    char tmpl[] = "/tmp/xt-reg-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/xtimerd.sock";
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
  }
  ~Listener() {
    close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

TEST(RegistrationTest, TrustsRootOwnUserAndTheConfiguredDaemonUid) {
  std::vector<uint32_t> uids = TrustedDaemonUids(-1);
  EXPECT_EQ(uids.front(), 0u);
  EXPECT_NE(std::find(uids.begin(), uids.end(), geteuid()), uids.end());
  uids = TrustedDaemonUids(4242);
  EXPECT_NE(std::find(uids.begin(), uids.end(), 4242u), uids.end());
}

TEST(RegistrationTest, AcceptsATrustedDaemon) {
  Listener l;
  std::string error;
  int fd = ConnectToDaemon(l.path(), &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_TRUE(CheckDaemonPeer(fd, l.path(), TrustedDaemonUids(-1), &error)) << error;
  close(fd);
}

TEST(RegistrationTest, RefusesADaemonOfAnotherUid) {
  Listener l;
  std::string error;
  int fd = ConnectToDaemon(l.path(), &error);
  ASSERT_GE(fd, 0) << error;
  // This process's uid is the daemon's: trusting only 4242 makes it a stranger.
  EXPECT_FALSE(CheckDaemonPeer(fd, l.path(), {4242}, &error));
  EXPECT_NE(error.find("runs as uid " + std::to_string(geteuid())), std::string::npos) << error;
  EXPECT_NE(error.find("trusted uids are 4242"), std::string::npos) << error;
  EXPECT_NE(error.find("XTIMER_DAEMON_UID"), std::string::npos) << error;
  close(fd);
}

TEST(RegistrationTest, RefusesADirectoryOthersMayWriteOrOwn) {
  Listener l;
  std::string error;
  int fd = ConnectToDaemon(l.path(), &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_EQ(chmod(l.dir().c_str(), 0777), 0);
  EXPECT_FALSE(CheckDaemonPeer(fd, l.path(), TrustedDaemonUids(-1), &error));
  EXPECT_NE(error.find("writable by other users and not sticky"), std::string::npos) << error;
  ASSERT_EQ(chmod(l.dir().c_str(), 01777), 0);  // sticky, as /tmp: others cannot replace it
  EXPECT_TRUE(CheckDaemonPeer(fd, l.path(), TrustedDaemonUids(-1), &error)) << error;
  ASSERT_EQ(chmod(l.dir().c_str(), 0755), 0);
  // Owners other than ours need root and a uid 65534 that exists here (not in every sandbox).
  if (chown(l.dir().c_str(), 65534, 65534) != 0) {
    fprintf(stderr, "skipping the owner checks: chown to 65534: %s\n", strerror(errno));
    close(fd);
    return;
  }
  EXPECT_FALSE(CheckDaemonPeer(fd, l.path(), TrustedDaemonUids(-1), &error));
  EXPECT_NE(error.find(l.dir() + " belongs to uid 65534"), std::string::npos) << error;
  ASSERT_EQ(chown(l.dir().c_str(), geteuid(), getegid()), 0);
  ASSERT_EQ(chown(l.path().c_str(), 65534, 65534), 0);
  EXPECT_FALSE(CheckDaemonPeer(fd, l.path(), TrustedDaemonUids(-1), &error));
  EXPECT_NE(error.find(l.path() + " belongs to uid 65534"), std::string::npos) << error;
  close(fd);
}

TEST(RegistrationTest, CarriesTheJobToken) {
  std::string error;
  auto w = RingWriter::Create(64, Identity{}, &error);
  ASSERT_TRUE(w.has_value()) << error;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_TRUE(SendRing(sv[0], w->fd(), &error, "tok-123")) << error;
  Hello got;
  int fd = ReceiveRing(sv[1], &got, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(got.version, kHelloVersion);
  EXPECT_EQ(HelloToken(got), "tok-123");
  EXPECT_FALSE(SendRing(sv[0], w->fd(), &error, std::string(kMaxJobToken + 1, 'x')));
  EXPECT_NE(error.find("job token longer than"), std::string::npos);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace format
}  // namespace xtimer

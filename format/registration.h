// Registration of a ring with the node daemon over its Unix stream socket (see ring.h).
//
// Message: one sendmsg carrying a Hello as data and the ring's memfd as SCM_RIGHTS. The daemon
// answers nothing; the connection stays open until the process exits.
//
// Trust, both ways (docs/security.md "Peers and identity"). Before it sends its ring (which the
// daemon may read and write) the hook checks who listens: the socket's peer credentials
// (SO_PEERCRED: the uid that called listen), the owner of the socket file and of the directory
// holding it must all be trusted uids (root, the process's own user, XTIMER_DAEMON_UID), and the
// directory may not be writable by others unless it is sticky. The daemon in turn takes the
// registrant's uid from SO_PEERCRED, never from the Hello; the Hello's job token (version 2)
// lets the daemon tell two jobs of one user apart.
#ifndef XTIMER_FORMAT_REGISTRATION_H_
#define XTIMER_FORMAT_REGISTRATION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace format {

constexpr uint32_t kHelloMagic = 0x4c454858;  // "XHEL"
constexpr uint32_t kHelloVersion = 2;       // with a job token
constexpr uint32_t kHelloVersionNoToken = 1;  // 16 bytes: magic, version, pid, reserved
constexpr size_t kHelloV1Bytes = 16;
constexpr size_t kMaxJobToken = 48;  // bytes of XTIMER_JOB_TOKEN

struct Hello {
  uint32_t magic;    // kHelloMagic
  uint32_t version;  // kHelloVersion (or kHelloVersionNoToken: the message ends after pid)
  int32_t pid;
  uint32_t token_size;        // 0..kMaxJobToken; 0 in version 1 (was reserved)
  char token[kMaxJobToken];   // the job token (XTIMER_JOB_TOKEN), not NUL-terminated
};
static_assert(sizeof(Hello) == 64, "Hello layout");
static_assert(offsetof(Hello, token_size) == 12 && offsetof(Hello, token) == 16, "Hello layout");

// Connects to the daemon's socket without ever blocking: a missing daemon, or one whose backlog
// is full (stopped, overloaded), fails at once. Returns the connected fd (close-on-exec,
// non-blocking), or -1 with *error.
int ConnectToDaemon(const std::string& socket_path, std::string* error);

// The uids a process hands its ring to: root, its own effective uid and, when >= 0,
// `daemon_uid` (XTIMER_DAEMON_UID).
std::vector<uint32_t> TrustedDaemonUids(int64_t daemon_uid);

// Whether the daemon behind the connected `socket_fd` may have the ring: its peer uid
// (SO_PEERCRED), the owner of `socket_path` and of its directory are in `trusted`, and the
// directory is not writable by group or others unless sticky. False with *error, a sentence that
// names what is wrong and what to do.
bool CheckDaemonPeer(int socket_fd, const std::string& socket_path,
                     const std::vector<uint32_t>& trusted, std::string* error);

// Sends a version-2 Hello with `token` (at most kMaxJobToken bytes; longer fails) and the ring
// fd; never blocks on a non-blocking fd (a full socket buffer fails). False with *error.
bool SendRing(int socket_fd, int ring_fd, std::string* error, const std::string& token = "");

// Receives one registration. Returns the received fd (close-on-exec), or -1 with *error; a
// message without exactly one fd, or with a bad Hello, is rejected (any fds it carried closed).
// A version-1 Hello is accepted with token_size 0.
int ReceiveRing(int socket_fd, Hello* hello, std::string* error);
// The Hello's token as a string ("" for none).
std::string HelloToken(const Hello& hello);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_REGISTRATION_H_

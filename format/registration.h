// Registration of a ring with the node daemon over its Unix stream socket (see ring.h).
//
// Message: one sendmsg carrying a Hello (16 bytes) as data and the ring's memfd as SCM_RIGHTS.
// The daemon answers nothing; the connection stays open until the process exits.
#ifndef XTIMER_FORMAT_REGISTRATION_H_
#define XTIMER_FORMAT_REGISTRATION_H_

#include <cstdint>
#include <string>

namespace xtimer {
namespace format {

constexpr uint32_t kHelloMagic = 0x4c454858;  // "XHEL"
constexpr uint32_t kHelloVersion = 1;

struct Hello {
  uint32_t magic;    // kHelloMagic
  uint32_t version;  // kHelloVersion
  int32_t pid;
  uint32_t reserved;
};
static_assert(sizeof(Hello) == 16, "Hello layout");

// Connects to the daemon's socket without ever blocking: a missing daemon, or one whose backlog
// is full (stopped, overloaded), fails at once. Returns the connected fd (close-on-exec,
// non-blocking), or -1 with *error.
int ConnectToDaemon(const std::string& socket_path, std::string* error);

// Sends the Hello and the ring fd; never blocks on a non-blocking fd (a full socket buffer
// fails). False with *error on failure.
bool SendRing(int socket_fd, int ring_fd, std::string* error);

// Receives one registration. Returns the received fd (close-on-exec), or -1 with *error; a
// message without exactly one fd, or with a bad Hello, is rejected (any fds it carried closed).
int ReceiveRing(int socket_fd, Hello* hello, std::string* error);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_REGISTRATION_H_

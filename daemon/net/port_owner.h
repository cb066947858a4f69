// Explains why a TCP port cannot be served: the bind error, and which process listens on it when
// /proc tells (/proc/net/tcp{,6} map the port to a socket inode, /proc/PID/fd to its owner).
#ifndef XTIMER_DAEMON_NET_PORT_OWNER_H_
#define XTIMER_DAEMON_NET_PORT_OWNER_H_

#include <string>

namespace xtimer {
namespace daemon {

// "pid 1234 (xtimerd)" for a process listening on TCP `port`, or "" when none can be seen
// (no listener, or one owned by a user whose /proc/PID/fd we may not read).
std::string PortOwner(int port);

// Why `what` (e.g. "the metrics port") cannot listen on address:port, and which flag moves it:
// "the metrics port 18889 on 127.0.0.1 is already in use by pid 1234 (xtimerd): stop that
// process, or choose another port with --metrics-port N (XTIMER_METRICS_PORT; 0 picks a free one)".
// `detail` is the underlying library's message, kept at the end in parentheses.
std::string ExplainListenFailure(const std::string& what, const std::string& address, int port,
                                 const std::string& flag, const std::string& env,
                                 const std::string& detail);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_NET_PORT_OWNER_H_

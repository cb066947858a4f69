// Who calls the control service (docs/security.md "Peers and identity", docs/control.md
// "Access"). The control port is TCP; a caller on this host is known by the uid that owns its end
// of the connection, read from the kernel's socket table (/proc/net/tcp and tcp6, the same
// network namespace). A caller whose end is not there is remote: its user cannot be known.
#ifndef XTIMER_DAEMON_CONTROL_CALLER_H_
#define XTIMER_DAEMON_CONTROL_CALLER_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "daemon/control/control_handler.h"

namespace xtimer {
namespace daemon {

// The uid owning the TCP socket of this host whose address is `client` and whose peer port is
// `server_port` (from PROC/net/tcp and PROC/net/tcp6), or -1 when there is none (a remote
// client, or the connection is already gone).
int64_t LocalTcpOwner(const sockaddr_storage& client, uint16_t server_port,
                      const std::string& proc = "/proc");

// The caller at `client`: local callers by uid (root and the daemon's own uid are privileged),
// remote ones privileged only with `allow_remote` (--control-allow-remote).
Caller CallerOf(const sockaddr_storage& client, uint16_t server_port, bool allow_remote,
                const std::string& proc = "/proc");

// gRPC's peer text ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000") as an address; false otherwise.
bool ParseGrpcPeer(const std::string& peer, sockaddr_storage* out);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONTROL_CALLER_H_

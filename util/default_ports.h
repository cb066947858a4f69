// xtimerd's default ports: the one place the daemon, the launcher (for a daemon it starts) and
// the CLI (for a host given without a port) take them from. Help texts and docs spell the same
// numbers (docs/daemon.md, docs/control.md).
#ifndef XTIMER_UTIL_DEFAULT_PORTS_H_
#define XTIMER_UTIL_DEFAULT_PORTS_H_

namespace xtimer {

inline constexpr int kDefaultControlPort = 18888;  // gRPC + HTTP/JSON control service
inline constexpr int kDefaultMetricsPort = 18889;  // Prometheus /metrics

}  // namespace xtimer

#endif  // XTIMER_UTIL_DEFAULT_PORTS_H_

// The readable sentence for what blocks a queued collective's stream, from the hook's in-flight
// detail (format::InflightBlocker): "kernel gemm_big launched 41.2 s ago", "GemmEx m=8192
// n=8192 k=8192 launched 3.0 s ago", "AllReduce seq 12 on comm 0x... launched 0.4 s ago".
// Used by the Status and HangCheck answers (and, through them, analysis evidence).
#ifndef XTIMER_DAEMON_BLOCKED_BY_H_
#define XTIMER_DAEMON_BLOCKED_BY_H_

#include <cstdint>
#include <string>

#include "format/ring.h"

namespace xtimer {
namespace daemon {

// `kernel_name` is the name of blocker.name_id ("" when unknown: the kernel is named by its id).
// Empty when the blocker is unknown (op 0). `now_ns` and launch times are CLOCK_REALTIME.
std::string DescribeBlocker(const format::InflightBlocker& blocker, const std::string& kernel_name,
                            int64_t now_ns);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_BLOCKED_BY_H_

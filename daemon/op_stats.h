// Pure functions that turn one OpRecord into the numbers the metrics need: its size class, FLOP
// count and (for collectives and p2p) the bytes that the nccl-tests bandwidth formulas use.
// Every input comes from untrusted shared memory, so all arithmetic is done in double (no
// integer overflow) and unknown values degrade to 0 rather than failing.
#ifndef XTIMER_DAEMON_OP_STATS_H_
#define XTIMER_DAEMON_OP_STATS_H_

#include <cstdint>

#include "format/record.h"

namespace xtimer {
namespace daemon {

// Size classes bound the label cardinality. Collectives, p2p, copies and sets are classed by
// record.bytes, matmuls by FLOP, everything else has the single class "all". See docs/metrics.md.
constexpr int kSizeClassCount = 5;
constexpr uint8_t kSizeClassAll = 255;

// 0..kSizeClassCount-1, or kSizeClassAll for kinds without a size.
uint8_t SizeClassOf(const format::OpRecord& r);
// The label value: "lt64KiB", ... for byte classes, "lt1GFLOP", ... for matmul, "all".
const char* SizeClassName(uint8_t kind, uint8_t size_class);

// Bytes per element; 0 for kUnknown or out-of-range values.
int DTypeSize(uint8_t dtype);

// 2 * m * n * k * batch for matmuls (batch 0 counts as 1), 0 for other kinds.
double FlopOf(const format::OpRecord& r);

// nccl-tests bus bandwidth factor for a collective or p2p op on `n` ranks: AllReduce 2(n-1)/n;
// AllGather, ReduceScatter, AlltoAll, Gather, Scatter (n-1)/n; Broadcast, Reduce, Send, Recv 1.
// 0 for other operations or n < 1.
double BusFactor(uint16_t op, int n);

// The size nccl-tests divides by the time to get the algorithm bandwidth: the full n * count
// buffer for AllGather, ReduceScatter, AlltoAll, Gather and Scatter (count is per rank), count
// elements otherwise. Falls back to record.bytes (times n where applicable) when the dtype size
// or count is unknown. 0 for operations that are not collectives or p2p.
double AlgoBytesOf(const format::OpRecord& r);

// AlgoBytesOf(r) * BusFactor(r.op, r.comm_size).
double BusBytesOf(const format::OpRecord& r);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_STATS_H_

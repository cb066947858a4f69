// Pure functions that turn one OpRecord into the numbers the metrics need: its size class, FLOP
// count and (for collectives and p2p) the bytes that the nccl-tests bandwidth formulas use.
// Every input comes from untrusted shared memory; unknown values degrade to 0 rather than
// failing.
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

// Everything below of one record at once, each formula applied once (ingest runs it per op).
struct OpMeasures {
  uint8_t size_class = kSizeClassAll;
  double flop = 0;
  double algo_bytes = 0;
  double bus_bytes = 0;
};
OpMeasures MeasuresOf(const format::OpRecord& r);

// 0..kSizeClassCount-1, or kSizeClassAll for kinds without a size.
uint8_t SizeClassOf(const format::OpRecord& r);
// The label value: "lt64KiB", ... for byte classes, "lt1GFLOP", ... for matmul, "all".
const char* SizeClassName(uint8_t kind, uint8_t size_class);

// The arithmetic itself is opmath's (opmath/op_math.h); these apply it to a record.

// 2 * m * n * k * batch for matmuls (batch 0 counts as 1), 0 for other kinds.
double FlopOf(const format::OpRecord& r);

// nccl-tests' algorithm bytes S of a collective or p2p op (opmath::AlgoBytes of the recorded
// send buffer and communicator size); 0 for other kinds.
double AlgoBytesOf(const format::OpRecord& r);

// nccl-tests' bus bytes: AlgoBytesOf(r) * opmath::BusFactor(r.op, r.comm_size).
double BusBytesOf(const format::OpRecord& r);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_STATS_H_

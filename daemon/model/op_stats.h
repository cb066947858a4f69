// Pure functions that turn one OpRecord into the numbers the metrics need: its size class, FLOP
// count and (for collectives and p2p) the bytes that the nccl-tests bandwidth formulas use.
// Every input comes from untrusted shared memory; unknown values degrade to 0 rather than
// failing.
#ifndef XTIMER_DAEMON_OP_STATS_H_
#define XTIMER_DAEMON_OP_STATS_H_

#include <cstdint>

#include "format/record.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace daemon {

// Size classes bound the label cardinality. Collectives, p2p, copies and sets are classed by
// record.bytes, matmuls by FLOP, everything else has the single class "all". See docs/metrics.md.
constexpr int kSizeClassCount = 5;
constexpr uint8_t kSizeClassAll = 255;

// Upper bounds of the classes (the last is open): bytes <64 KiB, <1 MiB, <16 MiB, <256 MiB;
// FLOP <1 G, <16 G, <256 G, <4 T.
constexpr uint64_t kByteClassBounds[kSizeClassCount - 1] = {
    uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{16} << 20, uint64_t{256} << 20};
constexpr double kFlopClassBounds[kSizeClassCount - 1] = {1e9, 16e9, 256e9, 4e12};

// The class of `value` under `bounds`.
template <typename T>
uint8_t ClassOf(T value, const T (&bounds)[kSizeClassCount - 1]) {
  for (int i = 0; i < kSizeClassCount - 1; ++i) {
    if (value < bounds[i]) return static_cast<uint8_t>(i);
  }
  return kSizeClassCount - 1;
}

// Everything below of one record at once, each formula applied once. Inline: ingest runs it for
// every op record.
struct OpMeasures {
  uint8_t size_class = kSizeClassAll;
  double flop = 0;
  double algo_bytes = 0;
  double bus_bytes = 0;
};
inline OpMeasures MeasuresOf(const format::OpRecord& r) {
  OpMeasures m;
  switch (static_cast<format::OpKind>(r.kind)) {
    case format::OpKind::kMatmul:
      m.flop = opmath::MatmulFlop(r.m, r.n, r.k, r.batch);
      m.size_class = ClassOf(m.flop, kFlopClassBounds);
      break;
    case format::OpKind::kCollective:
    case format::OpKind::kP2P: {
      const opmath::CommBytes b = opmath::CommBytesOf(r.op, r.bytes, r.comm_size);
      m.algo_bytes = b.algo;
      m.bus_bytes = b.bus;
      m.size_class = ClassOf(r.bytes, kByteClassBounds);
      break;
    }
    case format::OpKind::kMemcpy:
    case format::OpKind::kMemset:
      m.size_class = ClassOf(r.bytes, kByteClassBounds);
      break;
    default:
      break;
  }
  return m;
}

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

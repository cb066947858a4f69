// The arithmetic on operations, in one place: bytes per element, matmul FLOP, and for collectives
// and send/recv the sizes behind nccl-tests' algorithm and bus bandwidth. The hook uses it to fill
// OpRecord::bytes, the daemon for its metrics, the converter for the trace's arguments, so that
// the three always agree.
//
// Sizes (nccl-tests, doc/PERFORMANCE.md and src/*.cu). NCCL's `count` argument is per rank for
// every collective; the send buffer of one rank, and the size S that nccl-tests divides by the
// time (algbw = S / t), are whole multiples of count * element size:
//
//   op              send buffer   S (total buffer)   bus factor (busbw = algbw * factor)
//   AllReduce            1              1               2(n-1)/n
//   AllGather            1              n               (n-1)/n
//   ReduceScatter        n              n               (n-1)/n
//   AlltoAll             n              n               (n-1)/n
//   Gather               1              n               (n-1)/n
//   Scatter              n (root)       n               (n-1)/n
//   Broadcast, Reduce    1              1               1
//   Send, Recv           1              1               1
//
// n is the number of ranks in the communicator; n < 1 (unknown) counts as 1. All functions are
// pure, allocate nothing and never fail: values from untrusted memory degrade to 0, and byte
// products saturate instead of wrapping. Doubles where a product of untrusted values may exceed
// 2^64 (FLOP, bus bytes).
#ifndef XTIMER_OPMATH_OP_MATH_H_
#define XTIMER_OPMATH_OP_MATH_H_

#include <cstdint>

#include "format/record.h"

namespace xtimer {
namespace opmath {

// Bytes per element; 0 for DType::kUnknown and values outside the enum. kTF32 is 4 (FP32
// storage).
int ElementSize(format::DType dtype);

// 2 * m * n * k * batch; batch <= 0 counts as 1.
double MatmulFlop(int64_t m, int64_t n, int64_t k, int64_t batch);

// True for the collectives and send/recv, the operations the functions below describe.
bool IsCommunication(uint16_t op);

// How many count * element-size blocks one rank's send buffer holds (column 1 of the table);
// 0 for operations that are not communication.
int SendBlocks(uint16_t op, int n);
// How many blocks nccl-tests' S holds (column 2); 0 for operations that are not communication.
int TotalBlocks(uint16_t op, int n);

// The bytes of one rank's send buffer: count * element size * SendBlocks. What the hook records
// as OpRecord::bytes (and the timeline's EventRecord::bytes) for collectives and send/recv.
uint64_t SendBytes(uint16_t op, uint64_t count, int element_size, int n);

// nccl-tests' S from the send buffer's bytes: send_bytes / SendBlocks * TotalBlocks.
double AlgoBytes(uint16_t op, uint64_t send_bytes, int n);

// nccl-tests' correction factor (column 3); 0 for operations that are not communication.
double BusFactor(uint16_t op, int n);

// AlgoBytes * BusFactor: the bytes whose rate is the bus bandwidth.
double BusBytes(uint16_t op, uint64_t send_bytes, int n);

// AlgoBytes and BusBytes of one op together, for callers that need both (the daemon's ingest).
struct CommBytes {
  double algo = 0;
  double bus = 0;
};
CommBytes CommBytesOf(uint16_t op, uint64_t send_bytes, int n);

}  // namespace opmath
}  // namespace xtimer

#endif  // XTIMER_OPMATH_OP_MATH_H_

#include "opmath/op_math.h"

namespace xtimer {
namespace opmath {
namespace {

using format::DType;
using format::Operation;

int Ranks(int n) { return n < 1 ? 1 : n; }

}  // namespace

int ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
    case DType::kTF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kI8:
    case DType::kU8:
      return 1;
    case DType::kUnknown:
      return 0;
  }
  return 0;
}

double MatmulFlop(int64_t m, int64_t n, int64_t k, int64_t batch) {
  const double b = batch > 0 ? static_cast<double>(batch) : 1.0;
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * b;
}

bool IsCommunication(uint16_t op) { return TotalBlocks(op, 1) > 0; }

namespace {

// The table of op_math.h per communication op: whether one rank's send buffer, and nccl-tests'
// S, hold n blocks (true) or one (false); null for operations that are not communication.
struct BlockShape {
  bool send_n;
  bool total_n;
};

const BlockShape* ShapeOf(uint16_t op) {
  static constexpr BlockShape kOne{false, false}, kSendN{true, true}, kTotalN{false, true};
  switch (static_cast<Operation>(op)) {
    case Operation::kReduceScatter:
    case Operation::kAlltoAll:
    case Operation::kScatter:
      return &kSendN;
    case Operation::kAllGather:
    case Operation::kGather:
      return &kTotalN;
    case Operation::kAllReduce:
    case Operation::kBroadcast:
    case Operation::kReduce:
    case Operation::kSend:
    case Operation::kRecv:
      return &kOne;
    default:
      return nullptr;
  }
}

}  // namespace

int SendBlocks(uint16_t op, int n) {
  const BlockShape* s = ShapeOf(op);
  return s == nullptr ? 0 : s->send_n ? Ranks(n) : 1;
}

int TotalBlocks(uint16_t op, int n) {
  const BlockShape* s = ShapeOf(op);
  return s == nullptr ? 0 : s->total_n ? Ranks(n) : 1;
}

uint64_t SendBytes(uint16_t op, uint64_t count, int element_size, int n) {
  const int blocks = SendBlocks(op, n);
  if (element_size <= 0 || blocks == 0) return 0;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(element_size), &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<uint64_t>(blocks), &bytes)) {
    return UINT64_MAX;
  }
  return bytes;
}

double AlgoBytes(uint16_t op, uint64_t send_bytes, int n) {
  const int send = SendBlocks(op, n);
  if (send == 0) return 0;
  const double per_block = send == 1 ? static_cast<double>(send_bytes)  // no division: exact
                                     : static_cast<double>(send_bytes) / send;
  return per_block * TotalBlocks(op, n);
}

double BusFactor(uint16_t op, int n) {
  if (!IsCommunication(op)) return 0;
  const double dn = Ranks(n);
  switch (static_cast<Operation>(op)) {
    case Operation::kAllReduce:
      return 2.0 * (dn - 1) / dn;
    case Operation::kBroadcast:
    case Operation::kReduce:
    case Operation::kSend:
    case Operation::kRecv:
      return 1.0;
    default:  // AllGather, ReduceScatter, AlltoAll, Gather, Scatter
      return (dn - 1) / dn;
  }
}

CommBytes CommBytesOf(uint16_t op, uint64_t send_bytes, int n) {
  CommBytes b;
  b.algo = AlgoBytes(op, send_bytes, n);
  b.bus = b.algo * BusFactor(op, n);
  return b;
}

double BusBytes(uint16_t op, uint64_t send_bytes, int n) {
  return CommBytesOf(op, send_bytes, n).bus;
}

}  // namespace opmath
}  // namespace xtimer

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

namespace {

// nccl-tests' bus factor of an operation: 1, 2 (n - 1) / n, or (n - 1) / n.
enum class BusRule : uint8_t { kOne, kTwiceRing, kRing };

// The table of op_math.h per communication op: whether one rank's send buffer, and nccl-tests'
// S, hold n blocks (true) or one (false), and its bus factor; null for operations that are not
// communication. One lookup gives all three, so CommBytesOf switches once per op.
struct CommShape {
  bool send_n;
  bool total_n;
  BusRule bus;
};

const CommShape* ShapeOf(uint16_t op) {
  static constexpr CommShape kAllReduce{false, false, BusRule::kTwiceRing},
      kOne{false, false, BusRule::kOne}, kSendN{true, true, BusRule::kRing},
      kTotalN{false, true, BusRule::kRing};
  switch (static_cast<Operation>(op)) {
    case Operation::kAllReduce:
      return &kAllReduce;
    case Operation::kReduceScatter:
    case Operation::kAlltoAll:
    case Operation::kScatter:
      return &kSendN;
    case Operation::kAllGather:
    case Operation::kGather:
      return &kTotalN;
    case Operation::kBroadcast:
    case Operation::kReduce:
    case Operation::kSend:
    case Operation::kRecv:
      return &kOne;
    default:
      return nullptr;
  }
}

double AlgoBytesOf(const CommShape& s, uint64_t send_bytes, int n) {
  const int send = s.send_n ? Ranks(n) : 1;
  const int total = s.total_n ? Ranks(n) : 1;
  const double per_block = send == 1 ? static_cast<double>(send_bytes)  // no division: exact
                                     : static_cast<double>(send_bytes) / send;
  return per_block * total;
}

double BusFactorOf(const CommShape& s, int n) {
  const double dn = Ranks(n);
  switch (s.bus) {
    case BusRule::kTwiceRing:
      return 2.0 * (dn - 1) / dn;
    case BusRule::kRing:
      return (dn - 1) / dn;
    case BusRule::kOne:
      break;
  }
  return 1.0;
}

}  // namespace

bool IsCommunication(uint16_t op) { return ShapeOf(op) != nullptr; }

int SendBlocks(uint16_t op, int n) {
  const CommShape* s = ShapeOf(op);
  return s == nullptr ? 0 : s->send_n ? Ranks(n) : 1;
}

int TotalBlocks(uint16_t op, int n) {
  const CommShape* s = ShapeOf(op);
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
  const CommShape* s = ShapeOf(op);
  return s == nullptr ? 0 : AlgoBytesOf(*s, send_bytes, n);
}

double BusFactor(uint16_t op, int n) {
  const CommShape* s = ShapeOf(op);
  return s == nullptr ? 0 : BusFactorOf(*s, n);
}

CommBytes CommBytesOf(uint16_t op, uint64_t send_bytes, int n) {
  CommBytes b;
  const CommShape* s = ShapeOf(op);
  if (s == nullptr) return b;
  b.algo = AlgoBytesOf(*s, send_bytes, n);
  b.bus = b.algo * BusFactorOf(*s, n);
  return b;
}

double BusBytes(uint16_t op, uint64_t send_bytes, int n) {
  return CommBytesOf(op, send_bytes, n).bus;
}

}  // namespace opmath
}  // namespace xtimer

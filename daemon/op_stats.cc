#include "daemon/op_stats.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;
using format::Operation;

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * kKiB;
// Upper bounds of the byte classes (the last is open): <64 KiB, <1 MiB, <16 MiB, <256 MiB.
constexpr double kByteBounds[kSizeClassCount - 1] = {64 * kKiB, kMiB, 16 * kMiB, 256 * kMiB};
constexpr const char* kByteNames[kSizeClassCount] = {"lt64KiB", "64KiB_1MiB", "1MiB_16MiB",
                                                     "16MiB_256MiB", "ge256MiB"};
// FLOP classes: <1 G, <16 G, <256 G, <4 T.
constexpr double kFlopBounds[kSizeClassCount - 1] = {1e9, 16e9, 256e9, 4e12};
constexpr const char* kFlopNames[kSizeClassCount] = {"lt1GFLOP", "1GFLOP_16GFLOP",
                                                     "16GFLOP_256GFLOP", "256GFLOP_4TFLOP",
                                                     "ge4TFLOP"};

uint8_t Classify(double value, const double (&bounds)[kSizeClassCount - 1]) {
  for (int i = 0; i < kSizeClassCount - 1; ++i) {
    if (value < bounds[i]) return static_cast<uint8_t>(i);
  }
  return kSizeClassCount - 1;
}

bool IsFullBufferOp(uint16_t op) {
  switch (static_cast<Operation>(op)) {
    case Operation::kAllGather:
    case Operation::kReduceScatter:
    case Operation::kAlltoAll:
    case Operation::kGather:
    case Operation::kScatter:
      return true;
    default:
      return false;
  }
}

}  // namespace

uint8_t SizeClassOf(const format::OpRecord& r) {
  switch (static_cast<OpKind>(r.kind)) {
    case OpKind::kMatmul:
      return Classify(FlopOf(r), kFlopBounds);
    case OpKind::kCollective:
    case OpKind::kP2P:
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      return Classify(static_cast<double>(r.bytes), kByteBounds);
    default:
      return kSizeClassAll;
  }
}

const char* SizeClassName(uint8_t kind, uint8_t size_class) {
  if (size_class >= kSizeClassCount) return "all";
  return static_cast<OpKind>(kind) == OpKind::kMatmul ? kFlopNames[size_class]
                                                      : kByteNames[size_class];
}

int DTypeSize(uint8_t dtype) {
  switch (static_cast<format::DType>(dtype)) {
    case format::DType::kF64:
    case format::DType::kI64:
    case format::DType::kU64:
      return 8;
    case format::DType::kF32:
    case format::DType::kI32:
    case format::DType::kU32:
    case format::DType::kTF32:
      return 4;
    case format::DType::kF16:
    case format::DType::kBF16:
      return 2;
    case format::DType::kF8E4M3:
    case format::DType::kF8E5M2:
    case format::DType::kI8:
    case format::DType::kU8:
      return 1;
    case format::DType::kUnknown:
      return 0;
  }
  return 0;
}

double FlopOf(const format::OpRecord& r) {
  if (static_cast<OpKind>(r.kind) != OpKind::kMatmul) return 0;
  const double batch = r.batch > 0 ? static_cast<double>(r.batch) : 1.0;
  return 2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) * static_cast<double>(r.k) *
         batch;
}

double BusFactor(uint16_t op, int n) {
  if (n < 1) return 0;
  const double dn = n;
  switch (static_cast<Operation>(op)) {
    case Operation::kAllReduce:
      return 2.0 * (dn - 1) / dn;
    case Operation::kAllGather:
    case Operation::kReduceScatter:
    case Operation::kAlltoAll:
    case Operation::kGather:
    case Operation::kScatter:
      return (dn - 1) / dn;
    case Operation::kBroadcast:
    case Operation::kReduce:
    case Operation::kSend:
    case Operation::kRecv:
      return 1.0;
    default:
      return 0;
  }
}

double AlgoBytesOf(const format::OpRecord& r) {
  const auto kind = static_cast<OpKind>(r.kind);
  if (kind != OpKind::kCollective && kind != OpKind::kP2P) return 0;
  const int elem = DTypeSize(r.dtype);
  const double per_rank = (elem > 0 && r.count > 0)
                              ? static_cast<double>(r.count) * elem
                              : static_cast<double>(r.bytes);
  if (IsFullBufferOp(r.op)) {
    const double n = r.comm_size > 0 ? r.comm_size : 1;
    return per_rank * n;
  }
  return per_rank;
}

double BusBytesOf(const format::OpRecord& r) {
  return AlgoBytesOf(r) * BusFactor(r.op, r.comm_size);
}

}  // namespace daemon
}  // namespace xtimer

#include "daemon/model/op_stats.h"

#include "opmath/op_math.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;

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

bool IsCommKind(uint8_t kind) {
  return static_cast<OpKind>(kind) == OpKind::kCollective ||
         static_cast<OpKind>(kind) == OpKind::kP2P;
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

double FlopOf(const format::OpRecord& r) {
  if (static_cast<OpKind>(r.kind) != OpKind::kMatmul) return 0;
  return opmath::MatmulFlop(r.m, r.n, r.k, r.batch);
}

double AlgoBytesOf(const format::OpRecord& r) {
  if (!IsCommKind(r.kind)) return 0;
  return opmath::AlgoBytes(r.op, r.bytes, r.comm_size);
}

double BusBytesOf(const format::OpRecord& r) {
  if (!IsCommKind(r.kind)) return 0;
  return opmath::BusBytes(r.op, r.bytes, r.comm_size);
}

}  // namespace daemon
}  // namespace xtimer

#include "daemon/model/op_stats.h"

#include "opmath/op_math.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;

// Upper bounds of the byte classes (the last is open): <64 KiB, <1 MiB, <16 MiB, <256 MiB.
constexpr uint64_t kByteBounds[kSizeClassCount - 1] = {uint64_t{64} << 10, uint64_t{1} << 20,
                                                      uint64_t{16} << 20, uint64_t{256} << 20};
constexpr const char* kByteNames[kSizeClassCount] = {"lt64KiB", "64KiB_1MiB", "1MiB_16MiB",
                                                     "16MiB_256MiB", "ge256MiB"};
// FLOP classes: <1 G, <16 G, <256 G, <4 T.
constexpr double kFlopBounds[kSizeClassCount - 1] = {1e9, 16e9, 256e9, 4e12};
constexpr const char* kFlopNames[kSizeClassCount] = {"lt1GFLOP", "1GFLOP_16GFLOP",
                                                     "16GFLOP_256GFLOP", "256GFLOP_4TFLOP",
                                                     "ge4TFLOP"};

template <typename T>
uint8_t Classify(T value, const T (&bounds)[kSizeClassCount - 1]) {
  for (int i = 0; i < kSizeClassCount - 1; ++i) {
    if (value < bounds[i]) return static_cast<uint8_t>(i);
  }
  return kSizeClassCount - 1;
}

}  // namespace

OpMeasures MeasuresOf(const format::OpRecord& r) {
  OpMeasures m;
  switch (static_cast<OpKind>(r.kind)) {
    case OpKind::kMatmul:
      m.flop = opmath::MatmulFlop(r.m, r.n, r.k, r.batch);
      m.size_class = Classify(m.flop, kFlopBounds);
      break;
    case OpKind::kCollective:
    case OpKind::kP2P: {
      const opmath::CommBytes b = opmath::CommBytesOf(r.op, r.bytes, r.comm_size);
      m.algo_bytes = b.algo;
      m.bus_bytes = b.bus;
      m.size_class = Classify(r.bytes, kByteBounds);
      break;
    }
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      m.size_class = Classify(r.bytes, kByteBounds);
      break;
    default:
      break;
  }
  return m;
}

uint8_t SizeClassOf(const format::OpRecord& r) { return MeasuresOf(r).size_class; }

const char* SizeClassName(uint8_t kind, uint8_t size_class) {
  if (size_class >= kSizeClassCount) return "all";
  return static_cast<OpKind>(kind) == OpKind::kMatmul ? kFlopNames[size_class]
                                                      : kByteNames[size_class];
}

double FlopOf(const format::OpRecord& r) { return MeasuresOf(r).flop; }

double AlgoBytesOf(const format::OpRecord& r) { return MeasuresOf(r).algo_bytes; }

double BusBytesOf(const format::OpRecord& r) { return MeasuresOf(r).bus_bytes; }

}  // namespace daemon
}  // namespace xtimer

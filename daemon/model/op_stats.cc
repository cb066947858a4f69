#include "daemon/model/op_stats.h"

#include "opmath/op_math.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;

constexpr const char* kByteNames[kSizeClassCount] = {"lt64KiB", "64KiB_1MiB", "1MiB_16MiB",
                                                     "16MiB_256MiB", "ge256MiB"};
constexpr const char* kFlopNames[kSizeClassCount] = {"lt1GFLOP", "1GFLOP_16GFLOP",
                                                     "16GFLOP_256GFLOP", "256GFLOP_4TFLOP",
                                                     "ge4TFLOP"};

}  // namespace

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

// Test oracle: what nccl-tests reports for one call, written out per collective from its sources
// (src/<op>.cu: GetCollByteCount and GetBw) and doc/PERFORMANCE.md, without using op_math. Tests
// of op_math and of its users compare with it, so a change of either side shows up.
//
// nccl-tests calls each collective with NCCL's per-rank `count` and reports
//   algbw = S / t, busbw = algbw * factor,
// where S (bytes) is count * element size, times n for AllGather, ReduceScatter, AlltoAll,
// Gather and Scatter (their `count` is one rank's share of the total buffer).
#ifndef XTIMER_OPMATH_NCCL_TESTS_REFERENCE_H_
#define XTIMER_OPMATH_NCCL_TESTS_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "format/record.h"

namespace xtimer {
namespace opmath {
namespace testing {

struct NcclTestsCase {
  format::Operation op;
  const char* name;
  bool total_is_n_counts;  // S = n * count * size (else count * size)
  bool send_is_n_counts;   // one rank's send buffer holds n * count elements (NCCL's API)
  double (*factor)(int n);
};

inline double AllReduceFactor(int n) { return 2.0 * (n - 1) / n; }
inline double NMinusOneOverN(int n) { return static_cast<double>(n - 1) / n; }
inline double One(int) { return 1.0; }

inline const std::vector<NcclTestsCase>& NcclTestsCases() {
  using O = format::Operation;
  static const std::vector<NcclTestsCase> cases = {
      {O::kAllReduce, "AllReduce", false, false, AllReduceFactor},
      {O::kAllGather, "AllGather", true, false, NMinusOneOverN},
      {O::kReduceScatter, "ReduceScatter", true, true, NMinusOneOverN},
      {O::kAlltoAll, "AlltoAll", true, true, NMinusOneOverN},
      {O::kGather, "Gather", true, false, NMinusOneOverN},
      {O::kScatter, "Scatter", true, true, NMinusOneOverN},
      {O::kBroadcast, "Broadcast", false, false, One},
      {O::kReduce, "Reduce", false, false, One},
      {O::kSend, "Send", false, false, One},
      {O::kRecv, "Recv", false, false, One},
  };
  return cases;
}

// Every dtype with its size in bytes (NCCL's ncclTypeSize; TF32 is stored as FP32).
struct DTypeCase {
  format::DType dtype;
  int size;
};
inline const std::vector<DTypeCase>& DTypeCases() {
  using D = format::DType;
  static const std::vector<DTypeCase> cases = {
      {D::kF64, 8},    {D::kF32, 4},    {D::kF16, 2}, {D::kBF16, 2}, {D::kF8E4M3, 1},
      {D::kF8E5M2, 1}, {D::kI8, 1},     {D::kU8, 1},  {D::kI32, 4},  {D::kU32, 4},
      {D::kI64, 8},    {D::kU64, 8},    {D::kTF32, 4},
  };
  return cases;
}

inline uint64_t ReferenceSendBytes(const NcclTestsCase& c, uint64_t count, int size, int n) {
  return count * size * (c.send_is_n_counts ? n : 1);
}
inline double ReferenceAlgoBytes(const NcclTestsCase& c, uint64_t count, int size, int n) {
  return static_cast<double>(count) * size * (c.total_is_n_counts ? n : 1);
}
inline double ReferenceBusBytes(const NcclTestsCase& c, uint64_t count, int size, int n) {
  return ReferenceAlgoBytes(c, count, size, n) * c.factor(n);
}

}  // namespace testing
}  // namespace opmath
}  // namespace xtimer

#endif  // XTIMER_OPMATH_NCCL_TESTS_REFERENCE_H_

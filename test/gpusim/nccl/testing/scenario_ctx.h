// What every scenario of scenarios.cc works with: element access of each NCCL type, a rank's
// context (its failures, allocations and streams), the checking macros, and the expected inputs.
// Internal to the scenarios library.
#ifndef XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIO_CTX_H_
#define XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIO_CTX_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "test/gpusim/nccl/testing/scenarios.h"

namespace xtsim {
namespace nccl {
namespace testing {

// Element access, written independently of the library's datatypes.cc.
size_t ElemSize(ncclDataType_t t);
bool IsInteger(ncclDataType_t t);
double Get(ncclDataType_t t, const void* p, size_t i);
void Set(ncclDataType_t t, void* p, size_t i, double v);
// Relative tolerance: inputs are small integers, so most results are exact; averages over a
// non-power-of-two number of ranks are not.
double Tolerance(ncclDataType_t t);
// Element k of rank r's send buffer. fp8 gets 0/1 so that sums of up to 8 ranks stay exact.
double Input(int r, size_t k, ncclDataType_t t);

class Ctx {
 public:
  Ctx(int rank, int nranks, const ncclUniqueId& id, ScenarioResult* out)
      : rank(rank), nranks(nranks), id(id), out_(out) {}
  ~Ctx() {
    for (void* p : allocations_) cudaFree(p);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  void Fail(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    out_->failures.push_back("rank " + std::to_string(rank) + ": " + buf);
  }
  bool failed() const { return !out_->failures.empty(); }
  size_t failure_count() const { return out_->failures.size(); }
  void Value(const std::string& key, double v) { out_->values[key] = v; }
  // Tells the callback of SetProgressCallback (scenarios.h) that this rank reached `step`.
  void Progress(const std::string& step);

  void* Alloc(size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      Fail("cudaMalloc(%zu) failed", bytes);
      return nullptr;
    }
    allocations_.push_back(p);
    return p;
  }
  cudaStream_t NewStream() {
    cudaStream_t s = nullptr;
    if (cudaStreamCreate(&s) != cudaSuccess) Fail("cudaStreamCreate failed");
    streams_.push_back(s);
    return s;
  }
  cudaStream_t stream() {
    if (streams_.empty()) NewStream();
    return streams_.front();
  }

  const int rank;
  const int nranks;
  const ncclUniqueId id;

 private:
  ScenarioResult* out_;
  std::vector<void*> allocations_;
  std::vector<cudaStream_t> streams_;
};

#define NCCL_OK(ctx, call)                                                              \
  do {                                                                                  \
    ncclResult_t r_ = (call);                                                           \
    if (r_ != ncclSuccess) {                                                            \
      (ctx).Fail("line %d: %s returned %d (%s)", __LINE__, #call, static_cast<int>(r_), \
                 ncclGetLastError(nullptr));                                            \
      return;                                                                           \
    }                                                                                   \
  } while (0)

#define CUDA_OK(ctx, call)                                                                     \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      (ctx).Fail("line %d: %s returned CUDA error %d", __LINE__, #call, static_cast<int>(e_)); \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

#define EXPECT_THAT(ctx, cond, ...)       \
  do {                                    \
    if (!(cond)) (ctx).Fail(__VA_ARGS__); \
  } while (0)

struct CommDeleter {
  void operator()(ncclComm* c) const {
    if (c != nullptr) ncclCommDestroy(c);
  }
};
using CommPtr = std::unique_ptr<ncclComm, CommDeleter>;

// Fills `count` elements with rank r's inputs starting at input index `first`.
void FillInputs(void* p, ncclDataType_t t, int r, size_t count, size_t first = 0);

// Compares `count` elements of `got` with expected(i); reports the first mismatch.
template <typename F>
void ExpectElements(Ctx& ctx, const char* what, ncclDataType_t t, const void* got, size_t count,
                    F expected) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = expected(i), have = Get(t, got, i);
    if (std::fabs(have - want) <= Tolerance(t) * std::max(1.0, std::fabs(want))) continue;
    if (bad++ == 0) ctx.Fail("%s: element %zu is %g, expected %g", what, i, have, want);
  }
  if (bad > 1) ctx.Fail("%s: %zu of %zu elements wrong", what, bad, count);
}

}  // namespace testing
}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_TESTING_SCENARIO_CTX_H_

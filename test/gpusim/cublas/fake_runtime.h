// A recording stand-in for the simulated runtime's private table (sim_api.h), for unit tests of
// the cuBLAS / cuBLASLt logic without the real simulated libcudart. Linking this library defines
// xtsim_get_api, which sim_api_client.cc then uses instead of looking for libcudart.so.13.
#ifndef XTIMER_TEST_GPUSIM_CUBLAS_FAKE_RUNTIME_H_
#define XTIMER_TEST_GPUSIM_CUBLAS_FAKE_RUNTIME_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace xtsim {
namespace testing {

struct BusyOp {
  cudaStream_t stream;
  std::string name;
  int64_t duration_ns;
  unsigned flags;
};

// Valid streams: 0, cudaStreamLegacy, cudaStreamPerThread and those from NewStream().
class FakeRuntime {
 public:
  static FakeRuntime& Get();

  cudaStream_t NewStream();
  void DestroyStream(cudaStream_t stream);
  // Returns and forgets the enqueue_busy calls made so far.
  std::vector<BusyOp> TakeOps();
  // With no device every stream check fails with cudaErrorNoDevice.
  void set_no_device(bool no_device);

  // The table's functions.
  cudaError_t StreamCheck(cudaStream_t stream);
  cudaError_t EnqueueBusy(cudaStream_t stream, const char* name, int64_t duration_ns,
                          unsigned flags);

 private:
  std::mutex mu_;
  std::set<cudaStream_t> streams_;
  uintptr_t next_stream_ = 0x1000;
  std::vector<BusyOp> ops_;
  bool no_device_ = false;
};

}  // namespace testing
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUBLAS_FAKE_RUNTIME_H_

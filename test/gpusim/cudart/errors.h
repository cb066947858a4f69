// The calling thread's last-error slot and the error name / string tables.
#ifndef XTIMER_TEST_GPUSIM_CUDART_ERRORS_H_
#define XTIMER_TEST_GPUSIM_CUDART_ERRORS_H_

#include <cuda_runtime_api.h>

namespace xtsim {

// Records a failing result in the calling thread's last error (cudaGetLastError returns and
// clears it; cudaPeekAtLastError returns it) and passes it through. cudaErrorNotReady is not an
// error: the runtime does not record it.
cudaError_t Ret(cudaError_t e);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_ERRORS_H_

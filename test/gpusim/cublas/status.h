// Status names and version properties shared by the simulated cuBLAS and cuBLASLt.
#ifndef XTIMER_TEST_GPUSIM_CUBLAS_STATUS_H_
#define XTIMER_TEST_GPUSIM_CUBLAS_STATUS_H_

#include <cublas_api.h>

namespace xtsim {
namespace blas {

// "CUBLAS_STATUS_SUCCESS", ...; "CUBLAS_STATUS_UNKNOWN" for a value outside the enum.
const char* StatusName(cublasStatus_t status);
// A one-line description; "unknown cuBLAS status" for a value outside the enum.
const char* StatusString(cublasStatus_t status);

// cublasGetProperty / cublasLtGetProperty: the version of the headers the simulator was built
// against (CUBLAS_VER_MAJOR, _MINOR, _PATCH).
cublasStatus_t GetProperty(libraryPropertyType type, int* value);

}  // namespace blas
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUBLAS_STATUS_H_

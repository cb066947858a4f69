#include "test/gpusim/cublas/status.h"

namespace xtsim {
namespace blas {
namespace {

struct StatusInfo {
  cublasStatus_t status;
  const char* name;
  const char* text;
};

constexpr StatusInfo kStatuses[] = {
    {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS", "the operation completed successfully"},
    {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED",
     "the library was not initialized"},
    {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
    {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE",
     "an invalid value was used as an argument"},
    {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH",
     "the device lacks an architectural feature the operation needs"},
    {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR",
     "an access to GPU memory space failed"},
    {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED",
     "the GPU program failed to execute"},
    {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
    {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED",
     "the requested functionality is not supported"},
    {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR", "the license check failed"},
};

const StatusInfo* Find(cublasStatus_t status) {
  for (const StatusInfo& info : kStatuses) {
    if (info.status == status) return &info;
  }
  return nullptr;
}

}  // namespace

const char* StatusName(cublasStatus_t status) {
  const StatusInfo* info = Find(status);
  return info != nullptr ? info->name : "CUBLAS_STATUS_UNKNOWN";
}

const char* StatusString(cublasStatus_t status) {
  const StatusInfo* info = Find(status);
  return info != nullptr ? info->text : "unknown cuBLAS status";
}

cublasStatus_t GetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace blas
}  // namespace xtsim

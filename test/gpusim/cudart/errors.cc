#include "test/gpusim/cudart/errors.h"

#include <cstring>

namespace xtsim {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

struct NameEntry {
  int code;
  const char* name;
};
constexpr NameEntry kNames[] = {
#include "test/gpusim/cudart/error_names.inc"
};

// The runtime's own descriptions for the errors programs meet in practice; others fall back to
// the enumerator's name.
constexpr NameEntry kStrings[] = {
    {cudaSuccess, "no error"},
    {cudaErrorInvalidValue, "invalid argument"},
    {cudaErrorMemoryAllocation, "out of memory"},
    {cudaErrorInitializationError, "initialization error"},
    {cudaErrorInvalidConfiguration, "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "invalid device symbol"},
    {cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"},
    {cudaErrorMissingConfiguration, "__global__ function call is not configured"},
    {cudaErrorNoDevice, "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "invalid device function"},
    {cudaErrorInvalidResourceHandle, "invalid resource handle"},
    {cudaErrorNotReady, "device not ready"},
    {cudaErrorIllegalAddress, "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "too many resources requested for launch"},
    {cudaErrorLaunchFailure, "unspecified launch failure"},
    {cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"},
    {cudaErrorHostMemoryAlreadyRegistered,
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"},
    {cudaErrorNotSupported, "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated,
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureWrongThread,
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorIllegalState, "the operation is not permitted in the current state"},
    {cudaErrorInvalidKernelImage, "device kernel image is invalid"},
    {cudaErrorUnknown, "unknown error"},
};

const char* Lookup(const NameEntry* table, size_t n, int code) {
  for (size_t i = 0; i < n; ++i) {
    if (table[i].code == code) return table[i].name;
  }
  return nullptr;
}

}  // namespace

cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}

}  // namespace xtsim

extern "C" {

cudaError_t cudaGetLastError(void) {
  cudaError_t e = xtsim::t_last_error;
  xtsim::t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return xtsim::t_last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  const char* name = xtsim::Lookup(xtsim::kNames, sizeof(xtsim::kNames) / sizeof(xtsim::kNames[0]),
                                   static_cast<int>(error));
  return name != nullptr ? name : "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  const char* s = xtsim::Lookup(xtsim::kStrings,
                                sizeof(xtsim::kStrings) / sizeof(xtsim::kStrings[0]),
                                static_cast<int>(error));
  if (s != nullptr) return s;
  s = xtsim::Lookup(xtsim::kNames, sizeof(xtsim::kNames) / sizeof(xtsim::kNames[0]),
                    static_cast<int>(error));
  return s != nullptr ? s : "unrecognized error code";
}

}  // extern "C"

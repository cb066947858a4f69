// The error convention of the Python demo's C ABI (demo/python, docs/demo.md): every entry point
// returns 0 on success; on failure it returns 1 and leaves a message naming the file, line, call
// and decoded error, which the module's *_last_error() returns and Python raises.
#ifndef DEMO_PYTHON_PYDEMO_STATUS_H_
#define DEMO_PYTHON_PYDEMO_STATUS_H_

#include <cstdarg>
#include <cstdio>

#include <cuda_runtime.h>

#define PYDEMO_API extern "C" __attribute__((visibility("default")))

namespace pydemo {

// One message per module (each .so includes this header and is built with hidden visibility).
// Python calls one module from one thread at a time.
static char last_error[1024];

[[gnu::format(printf, 1, 2)]] [[maybe_unused]] static int Fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  return 1;
}

}  // namespace pydemo

#define PYDEMO_CUDA(call)                                                                 \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      return pydemo::Fail("%s:%d: %s failed: %s (%s = %d)", __FILE__, __LINE__, #call,    \
                          cudaGetErrorString(err_), cudaGetErrorName(err_),               \
                          static_cast<int>(err_));                                        \
    }                                                                                     \
  } while (0)

#endif  // DEMO_PYTHON_PYDEMO_STATUS_H_

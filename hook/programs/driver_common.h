// Shared by the driver-API test programs: a check that prints the failing call, and the cubin.
#ifndef XTIMER_HOOK_PROGRAMS_DRIVER_COMMON_H_
#define XTIMER_HOOK_PROGRAMS_DRIVER_COMMON_H_

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#define CHECK_CU(call)                                                             \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #call, (int)r_); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

// The bytes of the cubin file at `path` (as Triton reads its cache), or exits.
inline std::string ReadCubin(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  return bytes;
}

#endif  // XTIMER_HOOK_PROGRAMS_DRIVER_COMMON_H_

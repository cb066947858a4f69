// Shims for the cuBLAS and cuBLASLt entries of hooked_functions.inc. Nothing else belongs here.
#include "hook/interpose.h"

namespace format = ::xtimer::format;
using ::xtimer::hook::Kernels;

#define CUDART_TIMED XT_SKIP
#define CUDART_KERNEL XT_SKIP
#define CUDART_SYNC XT_SKIP
#define CUDART_CUSTOM XT_SKIP
#define CUBLAS_TIMED XT_GEN_TIMED
#define NCCL_OP XT_SKIP
#define NCCL_CUSTOM XT_SKIP
#include "hook/hooked_functions.inc"

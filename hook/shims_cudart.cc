// Shims for the CUDA runtime entries of hooked_functions.inc. Nothing else belongs here.
#include "hook/interpose.h"

namespace format = ::xtimer::format;
using ::xtimer::hook::Kernels;

#define CUDART_TIMED XT_GEN_TIMED
#define CUDART_KERNEL XT_GEN_KERNEL
#define CUDART_SYNC XT_GEN_SYNC
#define CUDART_CUSTOM XT_GEN_CUSTOM
#define CUBLAS_TIMED XT_SKIP
#define NCCL_OP XT_SKIP
#define NCCL_CUSTOM XT_SKIP
#include "hook/hooked_functions.inc"

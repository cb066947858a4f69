// Shims for the NCCL entries of hooked_functions.inc. Nothing else belongs here.
#include "hook/interpose.h"

namespace format = ::xtimer::format;
using ::xtimer::hook::Kernels;

#define CUDART_TIMED XT_SKIP
#define CUDART_KERNEL XT_SKIP
#define CUDART_SYNC XT_SKIP
#define CUDART_CUSTOM XT_SKIP
#define CUBLAS_TIMED XT_SKIP
#define NCCL_OP XT_GEN_NCCL_OP
#define NCCL_CUSTOM XT_GEN_CUSTOM
#include "hook/hooked_functions.inc"

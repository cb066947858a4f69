// How cuBLAS / cuBLASLt / NCCL stand-ins reach the simulated runtime's table (see sim_api.h).
#ifndef XTIMER_TEST_GPUSIM_SIM_API_CLIENT_H_
#define XTIMER_TEST_GPUSIM_SIM_API_CLIENT_H_

#include "test/gpusim/sim_api.h"

namespace xtsim {

// The engine's table. Exits with a clear message when the simulated libcuda.so.1 is not
// loaded (for example when only the simulated NCCL is on LD_LIBRARY_PATH).
const XtsimApi& Runtime();

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_SIM_API_CLIENT_H_

// A library named like a profiler plugin that exports no ncclProfiler_v5 (nor any older
// ncclProfiler_vN): NCCL must load nothing from it and go on (profiler_test).
extern "C" __attribute__((visibility("default"))) int xtsim_not_a_profiler = 1;

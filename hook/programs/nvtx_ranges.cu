// NVTX v3 (header-only, from the CUDA toolkit) the way training code uses it: nested push/pop
// ranges around CUDA work on two threads, marks, a domain with a registered string and an
// event-attribute range with a color, and a start/end range ended on another thread.
// Usage: nvtx_ranges STEPS
// Prints the level every push and pop returned ("levels: ..."), then "OK".
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hook/programs/common.h"

namespace {

std::string g_levels[2];  // per worker

void Note(int worker, int level) { g_levels[worker] += " " + std::to_string(level); }

// One training step of `worker`: step > forward (a memset) and backward, then a domain range.
void Step(int worker, nvtxDomainHandle_t domain, nvtxStringHandle_t optimizer, void* buf) {
  Note(worker, nvtxRangePushA("step"));
  Note(worker, nvtxRangePushA("forward"));
  CHECK(cudaMemset(buf, worker, 1 << 20));
  CHECK(cudaDeviceSynchronize());
  Note(worker, nvtxRangePop());
  nvtxMarkA("forward_done");
  Note(worker, nvtxRangePushA("backward"));
  Note(worker, nvtxRangePop());
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.colorType = NVTX_COLOR_ARGB;
  attr.color = 0xff00ff00;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = optimizer;
  Note(worker, nvtxDomainRangePushEx(domain, &attr));
  Note(worker, nvtxDomainRangePop(domain));
  Note(worker, nvtxRangePop());
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 3;
  void* buf[2];
  for (void*& b : buf) CHECK(cudaMalloc(&b, 1 << 20));
  nvtxDomainHandle_t domain = nvtxDomainCreateA("xtimer.test");
  nvtxStringHandle_t optimizer = nvtxDomainRegisterStringA(domain, "optimizer");
  const nvtxRangeId_t io = nvtxRangeStartA("checkpoint_io");
  std::thread workers[2];
  for (int w = 0; w < 2; ++w) {
    workers[w] = std::thread([w, steps, domain, optimizer, &buf] {
      for (int s = 0; s < steps; ++s) Step(w, domain, optimizer, buf[w]);
    });
  }
  for (std::thread& t : workers) t.join();
  std::thread([io] { nvtxRangeEnd(io); }).join();  // ended on another thread
  const int unmatched = nvtxRangePop();             // nothing open on this thread
  nvtxDomainDestroy(domain);
  for (void* b : buf) CHECK(cudaFree(b));
  for (const std::string& l : g_levels) printf("levels:%s\n", l.c_str());
  printf("unmatched pop: %d\nOK\n", unmatched);
  return 0;
}

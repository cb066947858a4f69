// pydemo_core: the CUDA + NCCL half of the Python demo job (demo/python/pydemo.py), a plain C ABI
// that Python loads with ctypes.CDLL, i.e. dlopen(RTLD_LOCAL): this library and its DT_NEEDED
// libcudart.so.13 and libnccl.so.2 sit in a local scope, as a framework's extension modules do.
//
// One step: host-to-device copies of the rank's inputs, two kernels (PydemoScale, PydemoGelu) on a
// scratch buffer, then on one stream an in-place ncclAllReduce (fp32 sum), an ncclAllGather and an
// in-place ncclBroadcast, device-to-host copies of the three results, one stream synchronize. The
// kernels never touch the checked buffers, so the results depend on copies and NCCL only and are
// the same on a GPU and on the simulator (which does not execute device code). See docs/demo.md.
#include <nccl.h>

#include <cstdint>
#include <cstring>

#include "demo/python/pydemo_status.h"

#define PYDEMO_NCCL(call)                                                                   \
  do {                                                                                      \
    ncclResult_t res_ = (call);                                                             \
    if (res_ != ncclSuccess) {                                                              \
      const char* last_ = ncclGetLastError(nullptr);                                        \
      return pydemo::Fail("%s:%d: %s failed: %s (ncclResult_t %d)%s%s", __FILE__, __LINE__, \
                          #call, ncclGetErrorString(res_), static_cast<int>(res_),          \
                          (last_ && *last_) ? ": " : "", (last_ && *last_) ? last_ : "");   \
    }                                                                                       \
  } while (0)

namespace {

__global__ void PydemoScale(float* x, int n, float factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] *= factor;
  }
}

__global__ void PydemoGelu(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

struct Core {
  int rank = 0;
  int world = 0;
  int n = 0;  // all-reduce elements
  int m = 0;  // all-gather elements per rank
  int b = 0;  // broadcast elements
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  float* reduce = nullptr;
  float* gather_in = nullptr;
  float* gather_out = nullptr;
  float* bcast = nullptr;
  float* scratch = nullptr;
};

int Allocate(Core* c) {
  PYDEMO_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  PYDEMO_CUDA(cudaMalloc(&c->reduce, sizeof(float) * c->n));
  PYDEMO_CUDA(cudaMalloc(&c->gather_in, sizeof(float) * c->m));
  PYDEMO_CUDA(cudaMalloc(&c->gather_out, sizeof(float) * c->m * c->world));
  PYDEMO_CUDA(cudaMalloc(&c->bcast, sizeof(float) * c->b));
  PYDEMO_CUDA(cudaMalloc(&c->scratch, sizeof(float) * c->n));
  PYDEMO_CUDA(cudaMemsetAsync(c->scratch, 0, sizeof(float) * c->n, c->stream));
  return 0;
}

int JoinCommunicator(Core* c, const ncclUniqueId& id) {
  PYDEMO_NCCL(ncclCommInitRank(&c->comm, c->world, id, c->rank));
  return 0;
}

void Release(Core* c) {
  if (c->comm != nullptr) ncclCommDestroy(c->comm);
  for (float* p : {c->reduce, c->gather_in, c->gather_out, c->bcast, c->scratch}) {
    if (p != nullptr) cudaFree(p);
  }
  if (c->stream != nullptr) cudaStreamDestroy(c->stream);
  delete c;
}

int LaunchKernels(Core* c) {
  const int threads = 256;
  const int blocks = (c->n + threads - 1) / threads;
  PydemoScale<<<blocks, threads, 0, c->stream>>>(c->scratch, c->n, 0.5f);
  PYDEMO_CUDA(cudaGetLastError());
  PydemoGelu<<<blocks, threads, 0, c->stream>>>(c->scratch, c->n);
  PYDEMO_CUDA(cudaGetLastError());
  return 0;
}

int Collectives(Core* c, int root) {
  PYDEMO_NCCL(ncclAllReduce(c->reduce, c->reduce, c->n, ncclFloat32, ncclSum, c->comm, c->stream));
  PYDEMO_NCCL(ncclAllGather(c->gather_in, c->gather_out, c->m, ncclFloat32, c->comm, c->stream));
  PYDEMO_NCCL(ncclBroadcast(c->bcast, c->bcast, c->b, ncclFloat32, root, c->comm, c->stream));
  return 0;
}

}  // namespace

PYDEMO_API const char* pydemo_core_last_error() { return pydemo::last_error; }

PYDEMO_API int pydemo_core_unique_id_size() { return static_cast<int>(sizeof(ncclUniqueId)); }

// Rank 0's NCCL id (pydemo_core_unique_id_size() bytes), to be handed to every rank.
PYDEMO_API int pydemo_core_get_unique_id(unsigned char* out) {
  ncclUniqueId id;
  PYDEMO_NCCL(ncclGetUniqueId(&id));
  memcpy(out, &id, sizeof(id));
  return 0;
}

// Selects device local_rank % device count, makes the stream and buffers, joins the
// communicator. *out is the handle for the other calls.
PYDEMO_API int pydemo_core_open(int rank, int world, int local_rank, const unsigned char* id,
                                int n, int m, int b, void** out) {
  if (rank < 0 || world < 1 || rank >= world || local_rank < 0 || n < 1 || m < 1 || b < 1) {
    return pydemo::Fail("pydemo_core_open: bad arguments rank %d world %d local_rank %d sizes "
                        "%d/%d/%d", rank, world, local_rank, n, m, b);
  }
  int devices = 0;
  PYDEMO_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 1) return pydemo::Fail("pydemo_core_open: no CUDA device");
  PYDEMO_CUDA(cudaSetDevice(local_rank % devices));
  auto* c = new Core;
  c->rank = rank;
  c->world = world;
  c->n = n;
  c->m = m;
  c->b = b;
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof(uid));
  if (Allocate(c) != 0 || JoinCommunicator(c, uid) != 0) {
    Release(c);
    return 1;
  }
  *out = c;
  return 0;
}

// The stream every operation of the step runs on (cudaStream_t), for other modules' work.
PYDEMO_API void* pydemo_core_stream(void* handle) { return static_cast<Core*>(handle)->stream; }

// One step: reduce_in (n), gather_in (m) and, on the root, bcast_in (b) go to the device; the
// kernels run; the collectives run; reduce_out (n), gather_out (world * m) and bcast_out (b)
// come back. Returns once the stream is drained and the communicator reports no error.
PYDEMO_API int pydemo_core_step(void* handle, const float* reduce_in, const float* gather_in,
                                const float* bcast_in, int root, float* reduce_out,
                                float* gather_out, float* bcast_out) {
  auto* c = static_cast<Core*>(handle);
  if (root < 0 || root >= c->world) return pydemo::Fail("pydemo_core_step: bad root %d", root);
  const cudaMemcpyKind h2d = cudaMemcpyHostToDevice, d2h = cudaMemcpyDeviceToHost;
  PYDEMO_CUDA(cudaMemcpyAsync(c->reduce, reduce_in, sizeof(float) * c->n, h2d, c->stream));
  PYDEMO_CUDA(cudaMemcpyAsync(c->gather_in, gather_in, sizeof(float) * c->m, h2d, c->stream));
  if (c->rank == root) {
    PYDEMO_CUDA(cudaMemcpyAsync(c->bcast, bcast_in, sizeof(float) * c->b, h2d, c->stream));
  }
  if (LaunchKernels(c) != 0 || Collectives(c, root) != 0) return 1;
  PYDEMO_CUDA(cudaMemcpyAsync(reduce_out, c->reduce, sizeof(float) * c->n, d2h, c->stream));
  PYDEMO_CUDA(cudaMemcpyAsync(gather_out, c->gather_out, sizeof(float) * c->m * c->world, d2h,
                              c->stream));
  PYDEMO_CUDA(cudaMemcpyAsync(bcast_out, c->bcast, sizeof(float) * c->b, d2h, c->stream));
  PYDEMO_CUDA(cudaStreamSynchronize(c->stream));
  ncclResult_t async = ncclSuccess;
  PYDEMO_NCCL(ncclCommGetAsyncError(c->comm, &async));
  PYDEMO_NCCL(async);
  return 0;
}

// The pieces of a PyTorch-shaped step (demo/python/pysteps.py): the forward kernels, an in-place
// fp32 sum all-reduce of the first `count` (<= n) elements of the reduce buffer (one parameter's
// gradient), and the step's one synchronize (the stream drained, the communicator's error read).
PYDEMO_API int pydemo_core_forward(void* handle) {
  return LaunchKernels(static_cast<Core*>(handle));
}

PYDEMO_API int pydemo_core_allreduce(void* handle, int count) {
  auto* c = static_cast<Core*>(handle);
  if (count < 1 || count > c->n) return pydemo::Fail("pydemo_core_allreduce: bad count %d", count);
  PYDEMO_NCCL(ncclAllReduce(c->reduce, c->reduce, count, ncclFloat32, ncclSum, c->comm, c->stream));
  return 0;
}

PYDEMO_API int pydemo_core_synchronize(void* handle) {
  auto* c = static_cast<Core*>(handle);
  PYDEMO_CUDA(cudaStreamSynchronize(c->stream));
  ncclResult_t async = ncclSuccess;
  PYDEMO_NCCL(ncclCommGetAsyncError(c->comm, &async));
  PYDEMO_NCCL(async);
  return 0;
}

PYDEMO_API int pydemo_core_close(void* handle) {
  auto* c = static_cast<Core*>(handle);
  cudaError_t err = cudaStreamSynchronize(c->stream);
  Release(c);
  PYDEMO_CUDA(err);
  return 0;
}

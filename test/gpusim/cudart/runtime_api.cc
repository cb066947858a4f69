// The CUDA runtime API entry points of the simulated libcudart.so.13. Each entry point validates
// its arguments as the runtime documents, does its work through the engine, and records a
// failure in the calling thread's last-error slot (see errors.cc).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/common/call_cost.h"
#include "test/gpusim/cudart/capture_rules.h"
#include "test/gpusim/cudart/engine.h"
#include "test/gpusim/cudart/errors.h"
#include "test/gpusim/cudart/kernels.h"
#include "test/gpusim/cudart/memory.h"
#include "test/gpusim/cudart/model.h"
#include "test/gpusim/cudart/stream_ops.h"

using xtsim::Engine;
using xtsim::MemKind;
using xtsim::Op;
using xtsim::OpKind;
using xtsim::Ret;
using xtsim::Stream;

namespace {

constexpr int kRuntimeVersion = 13000;
constexpr int kDriverVersion = 13000;

bool ValidDevice(int device) { return device >= 0 && device < Engine::Get().device_count(); }

// Common prologue: there must be a device, and CUDA must not have been initialized before a fork.
cudaError_t CheckInit() {
  if (Engine::InForkedChild()) return cudaErrorInitializationError;
  return Engine::Get().device_count() == 0 ? cudaErrorNoDevice : cudaSuccess;
}

// The prologue of a potentially unsafe call (capture_rules.h): CheckInit, then the capture
// interaction rules of the calling thread.
cudaError_t CheckInitUnsafe() {
  cudaError_t e = CheckInit();
  return e != cudaSuccess ? e : xtsim::CheckUnsafeCall();
}

cudaError_t ResolveStream(cudaStream_t handle, bool per_thread, Stream** out) {
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return e;
  *out = Engine::Get().Resolve(handle, per_thread);
  return *out == nullptr ? cudaErrorInvalidResourceHandle : cudaSuccess;
}

cudaError_t SubmitMemset(void* dst, int value, size_t count, Stream* s) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr) return cudaErrorInvalidValue;
  bool overflows = false;
  if (!xtsim::FindAllocation(dst, count, nullptr, &overflows) || overflows) {
    return cudaErrorInvalidValue;  // memset targets device (or managed / pinned) memory
  }
  Op op;
  op.kind = OpKind::kMemset;
  op.dst = dst;
  op.value = value;
  op.bytes = count;
  op.duration_ns = xtsim::MemsetDurationNs(count);
  return s->Submit(std::move(op));
}

cudaError_t MemcpyAsyncImpl(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream, bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  return xtsim::SubmitCopy(s, dst, src, count, kind);
}

cudaError_t MemcpySyncImpl(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                           bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(nullptr, per_thread, &s);
  if (e == cudaSuccess) e = xtsim::CheckUnsafeCall();
  if (e != cudaSuccess) return e;
  e = xtsim::SubmitCopy(s, dst, src, count, kind);
  if (e != cudaSuccess) return e;
  s->Synchronize();
  return cudaSuccess;
}

cudaError_t MemsetImpl(void* dst, int value, size_t count, cudaStream_t stream, bool per_thread,
                       bool sync) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e == cudaSuccess && sync) e = xtsim::CheckUnsafeCall();
  if (e != cudaSuccess) return e;
  e = SubmitMemset(dst, value, count, s);
  if (e == cudaSuccess && sync) s->Synchronize();
  return e;
}

cudaError_t ValidateLaunch(dim3 grid, dim3 block, size_t shared_mem) {
  unsigned long long threads =
      static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
    return cudaErrorInvalidConfiguration;
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
      grid.z > 65535) {
    return cudaErrorInvalidConfiguration;
  }
  if (shared_mem > 227 * 1024) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t LaunchImpl(const xtsim::KernelInfo* k, dim3 grid, dim3 block, size_t shared_mem,
                       cudaStream_t stream, bool per_thread) {
  xtsim::ChargeCall(xtsim::CallCost::kLaunch);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return e;
  if (k == nullptr) return cudaErrorInvalidDeviceFunction;
  e = ValidateLaunch(grid, block, shared_mem);
  if (e != cudaSuccess) return e;
  Stream* s;
  e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  Op op;
  op.kind = OpKind::kBusy;
  op.duration_ns = xtsim::ComputeDurationNs(k->duration_ns, s->device());
  return s->Submit(std::move(op));
}

cudaError_t LaunchExImpl(const cudaLaunchConfig_t* config, const void* func, bool per_thread) {
  if (config == nullptr) return cudaErrorInvalidValue;
  return LaunchImpl(xtsim::FindKernel(func), config->gridDim, config->blockDim,
                    config->dynamicSmemBytes, config->stream, per_thread);
}

cudaError_t StreamSyncImpl(cudaStream_t stream, bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  e = xtsim::CheckHostCallOn(s);
  if (e != cudaSuccess) return e;
  s->Synchronize();
  return cudaSuccess;
}

cudaError_t StreamQueryImpl(cudaStream_t stream, bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  e = xtsim::CheckHostCallOn(s);
  if (e != cudaSuccess) return e;
  return s->Query();
}

cudaError_t EventRecordImpl(cudaEvent_t event, cudaStream_t stream, bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  auto ev = Engine::Get().FindEvent(event);
  if (ev == nullptr) return cudaErrorInvalidResourceHandle;
  return xtsim::RecordEvent(s, ev);
}

cudaError_t StreamWaitEventImpl(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                                bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  auto ev = Engine::Get().FindEvent(event);
  if (ev == nullptr) return cudaErrorInvalidResourceHandle;
  return xtsim::WaitEvent(s, ev);
}

cudaError_t HostFnImpl(cudaStream_t stream, cudaHostFn_t fn, void* arg, bool per_thread) {
  if (fn == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  Op op;
  op.kind = OpKind::kHostFn;
  op.host_fn = fn;
  op.host_arg = arg;
  return s->Submit(std::move(op));
}

struct StreamCallbackArgs {
  cudaStreamCallback_t callback;
  cudaStream_t stream;
  void* user;
};

void RunStreamCallback(void* p) {
  std::unique_ptr<StreamCallbackArgs> args(static_cast<StreamCallbackArgs*>(p));
  args->callback(args->stream, cudaSuccess, args->user);
}

cudaError_t GraphLaunchImpl(cudaGraphExec_t exec_handle, cudaStream_t stream, bool per_thread) {
  if (exec_handle == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  return xtsim::LaunchGraph(*reinterpret_cast<xtsim::GraphExec*>(exec_handle), s);
}

cudaError_t StreamCaptureInfoImpl(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                  unsigned long long* id, cudaGraph_t* graph,
                                  const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                  size_t* num_deps, bool per_thread) {
  if (status == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  *status = s->CaptureStatus(id);
  if (graph != nullptr) *graph = nullptr;  // the graph under construction is not exposed
  if (deps != nullptr) *deps = nullptr;
  if (edges != nullptr) *edges = nullptr;
  if (num_deps != nullptr) *num_deps = 0;
  return cudaSuccess;
}

void FillProperties(cudaDeviceProp* p, int device) {
  memset(p, 0, sizeof(*p));
  snprintf(p->name, sizeof(p->name), "xtimer gpusim H100 model");
  for (int i = 0; i < 16; ++i) p->uuid.bytes[i] = static_cast<char>(0x40 + device * 16 + i);
  p->totalGlobalMem = xtsim::DeviceCapacity();
  p->sharedMemPerBlock = 48 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = 0x18 + device;
  p->asyncEngineCount = 3;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->persistingL2CacheMaxSize = 32 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->maxBlocksPerMultiProcessor = 32;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 1;
  p->clusterLaunch = 1;
}

int AttributeValue(cudaDeviceAttr attr, int device, bool* known) {
  cudaDeviceProp p;
  FillProperties(&p, device);
  *known = true;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: return p.maxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX: return p.maxThreadsDim[0];
    case cudaDevAttrMaxBlockDimY: return p.maxThreadsDim[1];
    case cudaDevAttrMaxBlockDimZ: return p.maxThreadsDim[2];
    case cudaDevAttrMaxGridDimX: return p.maxGridSize[0];
    case cudaDevAttrMaxGridDimY: return p.maxGridSize[1];
    case cudaDevAttrMaxGridDimZ: return p.maxGridSize[2];
    case cudaDevAttrMaxSharedMemoryPerBlock: return static_cast<int>(p.sharedMemPerBlock);
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return static_cast<int>(p.sharedMemPerBlockOptin);
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      return static_cast<int>(p.sharedMemPerMultiprocessor);
    case cudaDevAttrWarpSize: return p.warpSize;
    case cudaDevAttrMultiProcessorCount: return p.multiProcessorCount;
    case cudaDevAttrComputeCapabilityMajor: return p.major;
    case cudaDevAttrComputeCapabilityMinor: return p.minor;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrMaxRegistersPerBlock: return p.regsPerBlock;
    case cudaDevAttrL2CacheSize: return p.l2CacheSize;
    case cudaDevAttrGlobalMemoryBusWidth: return p.memoryBusWidth;
    case cudaDevAttrClockRate: return 1980000;
    case cudaDevAttrMemoryClockRate: return 2619000;
    case cudaDevAttrPciBusId: return p.pciBusID;
    case cudaDevAttrPciDeviceId: return 0;
    case cudaDevAttrPciDomainId: return 0;
    case cudaDevAttrUnifiedAddressing: return 1;
    case cudaDevAttrManagedMemory: return 1;
    case cudaDevAttrConcurrentManagedAccess: return 1;
    case cudaDevAttrCanMapHostMemory: return 1;
    case cudaDevAttrConcurrentKernels: return 1;
    case cudaDevAttrAsyncEngineCount: return p.asyncEngineCount;
    case cudaDevAttrStreamPrioritiesSupported: return 1;
    case cudaDevAttrCooperativeLaunch: return 1;
    case cudaDevAttrMemoryPoolsSupported: return 1;
    case cudaDevAttrIntegrated: return 0;
    case cudaDevAttrEccEnabled: return 1;
    case cudaDevAttrMaxBlocksPerMultiprocessor: return p.maxBlocksPerMultiProcessor;
    case cudaDevAttrComputeMode: return cudaComputeModeDefault;
    case cudaDevAttrGPUDirectRDMASupported: return 0;
    default:
      *known = false;
      return 0;
  }
}

// Reads one property of a stream into *out.
template <typename T, typename Getter>
cudaError_t StreamGetImpl(cudaStream_t stream, T* out, bool per_thread, Getter get) {
  if (out == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e == cudaSuccess) *out = get(*s);
  return e;
}

}  // namespace

// The macros below define an entry point and, where the real library has one, its per-thread
// default stream twin (_ptsz / _ptds): the twin treats stream 0 as cudaStreamPerThread.
#define XTSIM_STREAM_API(name, params, ptsz_suffix, impl_call_default, impl_call_pt) \
  extern "C" cudaError_t name params { return Ret(impl_call_default); }            \
  extern "C" cudaError_t name##ptsz_suffix params { return Ret(impl_call_pt); }

extern "C" {

// ----------------------------------------------------------------------------------- devices

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  *count = Engine::Get().device_count();
  return Ret(*count == 0 ? cudaErrorNoDevice : cudaSuccess);
}

cudaError_t cudaSetDevice(int device) {
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  if (!ValidDevice(device)) return Ret(cudaErrorInvalidDevice);
  xtsim::SetCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  return Ret(ValidDevice(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  *device = xtsim::CurrentDevice();
  return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return Ret(CheckInit()); }

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return Ret(cudaErrorInvalidValue);
  *flags = cudaDeviceScheduleAuto | cudaDeviceMapHost;
  return Ret(CheckInit());
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Ret(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Ret(cudaErrorInvalidDevice);
  FillProperties(prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Ret(cudaErrorInvalidDevice);
  bool known = false;
  int v = AttributeValue(attr, device, &known);
  if (!known) {
    xtsim::Warn("cudaDeviceGetAttribute: attribute %d is not modelled by the GPU simulator",
                static_cast<int>(attr));
    return Ret(cudaErrorInvalidValue);
  }
  *value = v;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (pci_bus_id == nullptr || len <= 0) return Ret(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Ret(cudaErrorInvalidDevice);
  snprintf(pci_bus_id, static_cast<size_t>(len), "0000:%02x:00.0", 0x18 + device);
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return Ret(cudaErrorInvalidValue);
  *version = kDriverVersion;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return Ret(cudaErrorInvalidValue);
  *version = kRuntimeVersion;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  Engine::Get().SynchronizeDevice(xtsim::CurrentDevice());
  return cudaSuccess;
}

cudaError_t cudaDeviceReset(void) {
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  // Waits for the device's work; allocations and handles stay valid in the simulator (a real
  // reset destroys them, and using them afterwards is undefined behaviour anyway).
  Engine::Get().SynchronizeDevice(xtsim::CurrentDevice());
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return Ret(CheckInit());
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (can == nullptr) return Ret(cudaErrorInvalidValue);
  if (!ValidDevice(device) || !ValidDevice(peer)) return Ret(cudaErrorInvalidDevice);
  *can = device != peer ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (!ValidDevice(peer)) return Ret(cudaErrorInvalidDevice);
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  static std::mutex mu;
  static std::vector<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mu);
  std::pair<int, int> link(xtsim::CurrentDevice(), peer);
  if (std::find(enabled.begin(), enabled.end(), link) != enabled.end()) {
    return Ret(cudaErrorPeerAccessAlreadyEnabled);
  }
  enabled.push_back(link);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (value == nullptr) return Ret(cudaErrorInvalidValue);
  switch (limit) {
    case cudaLimitStackSize: *value = 1024; break;
    case cudaLimitPrintfFifoSize: *value = 1 << 20; break;
    case cudaLimitMallocHeapSize: *value = 8 << 20; break;
    default: *value = 0; break;
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return Ret(CheckInit()); }

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (free_bytes == nullptr || total == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  *total = xtsim::DeviceCapacity();
  *free_bytes = *total - std::min(*total, xtsim::DeviceAllocated(xtsim::CurrentDevice()));
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------ memory

cudaError_t cudaMalloc(void** ptr, size_t size) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  return Ret(xtsim::Allocate(ptr, size, MemKind::kDevice, xtsim::CurrentDevice(), 0));
}

cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return Ret(cudaErrorInvalidValue);
  return Ret(xtsim::Allocate(ptr, size, MemKind::kManaged, xtsim::CurrentDevice(), flags));
}

cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (pitch == nullptr) return Ret(cudaErrorInvalidValue);
  *pitch = (width + 511) / 512 * 512;
  return cudaMalloc(ptr, *pitch * height);
}

cudaError_t cudaFree(void* ptr) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  return Ret(xtsim::FreeAllocation(
      ptr, xtsim::KindBit(MemKind::kDevice) | xtsim::KindBit(MemKind::kManaged)));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  return Ret(xtsim::Allocate(ptr, size, MemKind::kHostPinned, xtsim::CurrentDevice(), 0));
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  if ((flags & ~(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined)) != 0) {
    return Ret(cudaErrorInvalidValue);
  }
  return Ret(xtsim::Allocate(ptr, size, MemKind::kHostPinned, xtsim::CurrentDevice(), flags));
}

cudaError_t cudaFreeHost(void* ptr) {
  return Ret(xtsim::FreeAllocation(ptr, xtsim::KindBit(MemKind::kHostPinned)));
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  return Ret(xtsim::RegisterHost(ptr, size, flags));
}

cudaError_t cudaHostUnregister(void* ptr) { return Ret(xtsim::UnregisterHost(ptr)); }

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags) {
  if (device_ptr == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  xtsim::Allocation a;
  if (!xtsim::FindAllocation(host_ptr, 1, &a, nullptr) ||
      (a.kind != MemKind::kHostPinned && a.kind != MemKind::kHostRegistered)) {
    return Ret(cudaErrorInvalidValue);
  }
  *device_ptr = host_ptr;  // unified addressing: the mapped device address is the host address
  return cudaSuccess;
}

cudaError_t cudaHostGetFlags(unsigned int* flags, void* host_ptr) {
  if (flags == nullptr) return Ret(cudaErrorInvalidValue);
  xtsim::Allocation a;
  if (!xtsim::FindAllocation(host_ptr, 1, &a, nullptr) || a.kind != MemKind::kHostPinned) {
    return Ret(cudaErrorInvalidValue);
  }
  *flags = a.flags;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  if (attr == nullptr) return Ret(cudaErrorInvalidValue);
  memset(attr, 0, sizeof(*attr));
  xtsim::Allocation a;
  if (!xtsim::FindAllocation(ptr, 1, &a, nullptr)) {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;  // what the runtime reports for unregistered host memory
    attr->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attr->device = a.device;
  switch (a.kind) {
    case MemKind::kDevice:
      attr->type = cudaMemoryTypeDevice;
      attr->devicePointer = const_cast<void*>(ptr);
      break;
    case MemKind::kManaged:
      attr->type = cudaMemoryTypeManaged;
      attr->devicePointer = const_cast<void*>(ptr);
      attr->hostPointer = const_cast<void*>(ptr);
      break;
    case MemKind::kHostPinned:
    case MemKind::kHostRegistered:
      attr->type = cudaMemoryTypeHost;
      attr->devicePointer = const_cast<void*>(ptr);
      attr->hostPointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}

static cudaError_t MallocAsyncImpl(void** ptr, size_t size, cudaStream_t stream, bool per_thread) {
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  return e != cudaSuccess ? e : xtsim::Allocate(ptr, size, MemKind::kDevice, s->device(), 0);
}
XTSIM_STREAM_API(cudaMallocAsync, (void** ptr, size_t size, cudaStream_t stream), _ptsz,
                 MallocAsyncImpl(ptr, size, stream, false), MallocAsyncImpl(ptr, size, stream, true))

static cudaError_t FreeAsyncImpl(void* ptr, cudaStream_t stream, bool per_thread) {
  if (ptr == nullptr) return cudaSuccess;
  Stream* s;
  cudaError_t e = ResolveStream(stream, per_thread, &s);
  if (e != cudaSuccess) return e;
  if (!xtsim::FindAllocation(ptr, 1, nullptr, nullptr)) return cudaErrorInvalidValue;
  Op op;
  op.kind = OpKind::kFree;
  op.dst = ptr;
  return s->Submit(std::move(op));
}
XTSIM_STREAM_API(cudaFreeAsync, (void* ptr, cudaStream_t stream), _ptsz,
                 FreeAsyncImpl(ptr, stream, false), FreeAsyncImpl(ptr, stream, true))

XTSIM_STREAM_API(cudaMemcpy, (void* dst, const void* src, size_t count, cudaMemcpyKind kind),
                 _ptds, MemcpySyncImpl(dst, src, count, kind, false),
                 MemcpySyncImpl(dst, src, count, kind, true))
XTSIM_STREAM_API(cudaMemcpyAsync,
                 (void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream),
                 _ptsz, MemcpyAsyncImpl(dst, src, count, kind, stream, false),
                 MemcpyAsyncImpl(dst, src, count, kind, stream, true))
XTSIM_STREAM_API(cudaMemset, (void* dst, int value, size_t count), _ptds,
                 MemsetImpl(dst, value, count, nullptr, false, true),
                 MemsetImpl(dst, value, count, nullptr, true, true))
XTSIM_STREAM_API(cudaMemsetAsync, (void* dst, int value, size_t count, cudaStream_t stream),
                 _ptsz, MemsetImpl(dst, value, count, stream, false, false),
                 MemsetImpl(dst, value, count, stream, true, false))

cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t count) {
  return Ret(MemcpySyncImpl(dst, src, count, cudaMemcpyDeviceToDevice, false));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t count,
                                cudaStream_t stream) {
  return Ret(MemcpyAsyncImpl(dst, src, count, cudaMemcpyDeviceToDevice, stream, false));
}

// A __device__ variable's host shadow (registered by __cudaRegisterVar) is its simulated storage.
XTSIM_STREAM_API(cudaMemcpyToSymbol,
                 (const void* symbol, const void* src, size_t count, size_t offset,
                  cudaMemcpyKind kind),
                 _ptds,
                 MemcpySyncImpl(static_cast<char*>(const_cast<void*>(symbol)) + offset, src,
                                count, kind, false),
                 MemcpySyncImpl(static_cast<char*>(const_cast<void*>(symbol)) + offset, src,
                                count, kind, true))
XTSIM_STREAM_API(cudaMemcpyFromSymbol,
                 (void* dst, const void* symbol, size_t count, size_t offset,
                  cudaMemcpyKind kind),
                 _ptds,
                 MemcpySyncImpl(dst, static_cast<const char*>(symbol) + offset, count, kind,
                                false),
                 MemcpySyncImpl(dst, static_cast<const char*>(symbol) + offset, count, kind,
                                true))

cudaError_t cudaGetSymbolAddress(void** dev_ptr, const void* symbol) {
  if (dev_ptr == nullptr || symbol == nullptr) return Ret(cudaErrorInvalidSymbol);
  *dev_ptr = const_cast<void*>(symbol);
  return cudaSuccess;
}

// ----------------------------------------------------------------------------------- streams

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  if (stream == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  if ((flags & ~cudaStreamNonBlocking) != 0) return Ret(cudaErrorInvalidValue);
  priority = std::max(-5, std::min(0, priority));  // clamped, as documented
  *stream = reinterpret_cast<cudaStream_t>(
      Engine::Get().CreateStream(xtsim::CurrentDevice(), flags, priority));
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithPriority(stream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return Ret(cudaErrorInvalidResourceHandle);
  }
  Stream* s;
  cudaError_t e = ResolveStream(stream, false, &s);
  if (e != cudaSuccess) return Ret(e);
  Engine::Get().DestroyStream(s);
  return cudaSuccess;
}

XTSIM_STREAM_API(cudaStreamSynchronize, (cudaStream_t stream), _ptsz,
                 StreamSyncImpl(stream, false), StreamSyncImpl(stream, true))
XTSIM_STREAM_API(cudaStreamQuery, (cudaStream_t stream), _ptsz, StreamQueryImpl(stream, false),
                 StreamQueryImpl(stream, true))
XTSIM_STREAM_API(cudaStreamWaitEvent, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
                 _ptsz, StreamWaitEventImpl(stream, event, flags, false),
                 StreamWaitEventImpl(stream, event, flags, true))
XTSIM_STREAM_API(cudaLaunchHostFunc, (cudaStream_t stream, cudaHostFn_t fn, void* user_data),
                 _ptsz, HostFnImpl(stream, fn, user_data, false),
                 HostFnImpl(stream, fn, user_data, true))

static cudaError_t StreamAddCallbackImpl(cudaStream_t stream, cudaStreamCallback_t callback,
                                         void* user_data, unsigned int flags, bool per_thread) {
  if (callback == nullptr || flags != 0) return cudaErrorInvalidValue;
  auto* args = new StreamCallbackArgs{callback, stream, user_data};
  cudaError_t e = HostFnImpl(stream, RunStreamCallback, args, per_thread);
  if (e != cudaSuccess) delete args;
  return e;
}
XTSIM_STREAM_API(cudaStreamAddCallback,
                 (cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                  unsigned int flags),
                 _ptsz, StreamAddCallbackImpl(stream, callback, user_data, flags, false),
                 StreamAddCallbackImpl(stream, callback, user_data, flags, true))

#define XTSIM_STREAM_GETTER(name, type, expr)                                           \
  XTSIM_STREAM_API(name, (cudaStream_t stream, type* out), _ptsz,                       \
                   StreamGetImpl(stream, out, false, [](Stream& s) { return expr; }), \
                   StreamGetImpl(stream, out, true, [](Stream& s) { return expr; }))
XTSIM_STREAM_GETTER(cudaStreamGetFlags, unsigned int, s.flags())
XTSIM_STREAM_GETTER(cudaStreamGetPriority, int, s.priority())
XTSIM_STREAM_GETTER(cudaStreamGetDevice, int, s.device())
XTSIM_STREAM_GETTER(cudaStreamGetId, unsigned long long, s.id())

// ----------------------------------------------------------------------------------- capture

static cudaError_t BeginCaptureImpl(cudaStream_t stream, cudaStreamCaptureMode mode, bool pt) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return cudaErrorInvalidValue;
  }
  Stream* s;
  cudaError_t e = ResolveStream(stream, pt, &s);
  return e != cudaSuccess ? e : s->BeginCapture(mode);
}
XTSIM_STREAM_API(cudaStreamBeginCapture, (cudaStream_t stream, cudaStreamCaptureMode mode), _ptsz,
                 BeginCaptureImpl(stream, mode, false), BeginCaptureImpl(stream, mode, true))

static cudaError_t EndCaptureImpl(cudaStream_t stream, cudaGraph_t* graph, bool pt) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, pt, &s);
  return e != cudaSuccess ? e : s->EndCapture(graph);
}
XTSIM_STREAM_API(cudaStreamEndCapture, (cudaStream_t stream, cudaGraph_t* graph), _ptsz,
                 EndCaptureImpl(stream, graph, false), EndCaptureImpl(stream, graph, true))

static cudaError_t IsCapturingImpl(cudaStream_t stream, cudaStreamCaptureStatus* status, bool pt) {
  xtsim::ChargeCall(xtsim::CallCost::kStreamIsCapturing);
  if (status == nullptr) return cudaErrorInvalidValue;
  Stream* s;
  cudaError_t e = ResolveStream(stream, pt, &s);
  if (e == cudaSuccess) *status = s->CaptureStatus(nullptr);
  return e;
}
XTSIM_STREAM_API(cudaStreamIsCapturing, (cudaStream_t stream, cudaStreamCaptureStatus* status),
                 _ptsz, IsCapturingImpl(stream, status, false),
                 IsCapturingImpl(stream, status, true))

XTSIM_STREAM_API(cudaStreamGetCaptureInfo,
                 (cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                  cudaGraph_t* graph, const cudaGraphNode_t** deps,
                  const cudaGraphEdgeData** edges, size_t* num_deps),
                 _ptsz,
                 StreamCaptureInfoImpl(stream, status, id, graph, deps, edges, num_deps, false),
                 StreamCaptureInfoImpl(stream, status, id, graph, deps, edges, num_deps, true))

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return Ret(cudaErrorInvalidValue);
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed) {
    return Ret(cudaErrorInvalidValue);
  }
  xtsim::ExchangeThreadCaptureMode(mode);
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------ graphs

cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  if (graph == nullptr || flags != 0) return Ret(cudaErrorInvalidValue);
  *graph = reinterpret_cast<cudaGraph_t>(
      new std::shared_ptr<xtsim::Graph>(std::make_shared<xtsim::Graph>()));
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return Ret(cudaErrorInvalidValue);
  delete reinterpret_cast<std::shared_ptr<xtsim::Graph>*>(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num_nodes) {
  if (graph == nullptr || num_nodes == nullptr) return Ret(cudaErrorInvalidValue);
  const auto& g = *reinterpret_cast<std::shared_ptr<xtsim::Graph>*>(graph);
  if (nodes != nullptr) {
    // Node handles are not modelled; a caller that asks for them gets a loud error.
    xtsim::NotImplemented("cudaGraphGetNodes (node handles)");
    return Ret(cudaErrorNotSupported);
  }
  *num_nodes = g->ops.size();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (exec == nullptr || graph == nullptr) return Ret(cudaErrorInvalidValue);
  const auto& g = *reinterpret_cast<std::shared_ptr<xtsim::Graph>*>(graph);
  auto* e = new xtsim::GraphExec();
  e->ops = g->ops;  // tasks are shared: their contexts live until the last graph is gone
  e->device = xtsim::CurrentDevice();
  *exec = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (exec == nullptr) return Ret(cudaErrorInvalidValue);
  delete reinterpret_cast<xtsim::GraphExec*>(exec);
  return cudaSuccess;
}

XTSIM_STREAM_API(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), _ptsz,
                 GraphLaunchImpl(exec, stream, false), GraphLaunchImpl(exec, stream, true))
XTSIM_STREAM_API(cudaGraphUpload, (cudaGraphExec_t exec, cudaStream_t stream), _ptsz,
                 exec == nullptr ? cudaErrorInvalidValue : cudaSuccess,
                 exec == nullptr ? cudaErrorInvalidValue : cudaSuccess)

// ------------------------------------------------------------------------------------ events

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  if ((flags & ~(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)) != 0 ||
      ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))) {
    return Ret(cudaErrorInvalidValue);
  }
  *event = reinterpret_cast<cudaEvent_t>(
      Engine::Get().NewEvent(flags, xtsim::CurrentDevice()).get());
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  return Ret(Engine::Get().DestroyEvent(event) ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

XTSIM_STREAM_API(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), _ptsz,
                 EventRecordImpl(event, stream, false), EventRecordImpl(event, stream, true))
XTSIM_STREAM_API(cudaEventRecordWithFlags,
                 (cudaEvent_t event, cudaStream_t stream, unsigned int flags), _ptsz,
                 (flags & ~cudaEventRecordExternal) != 0 ? cudaErrorInvalidValue
                                                         : EventRecordImpl(event, stream, false),
                 (flags & ~cudaEventRecordExternal) != 0 ? cudaErrorInvalidValue
                                                         : EventRecordImpl(event, stream, true))

cudaError_t cudaEventQuery(cudaEvent_t event) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  auto ev = Engine::Get().FindEvent(event);
  if (ev == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  return xtsim::QueryEvent(*ev);  // cudaErrorNotReady is not recorded
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  cudaError_t e = CheckInitUnsafe();
  if (e != cudaSuccess) return Ret(e);
  auto ev = Engine::Get().FindEvent(event);
  if (ev == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  xtsim::SynchronizeEvent(*ev);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Ret(cudaErrorInvalidValue);
  cudaError_t e = CheckInit();
  if (e != cudaSuccess) return Ret(e);
  auto a = Engine::Get().FindEvent(start);
  auto b = Engine::Get().FindEvent(end);
  if (a == nullptr || b == nullptr) return Ret(cudaErrorInvalidResourceHandle);
  return Ret(xtsim::ElapsedTime(*a, *b, ms));
}

// ------------------------------------------------------------------------------------ kernels

void** __cudaRegisterFatBinary(void* fat_cubin) {
  // The handle is only passed back to us; the fat binary itself is never read (no device code
  // runs on the simulator).
  static void* handles[1];
  (void)fat_cubin;
  return handles;
}

void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  xtsim::RegisterKernel(host_fun, device_name);
}

void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}

namespace {
struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared_mem;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> t_call_configs;
}  // namespace

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem,
                                     struct CUstream_st* stream) {
  t_call_configs.push_back({grid, block, shared_mem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_mem,
                                       void* stream) {
  if (t_call_configs.empty()) return cudaErrorMissingConfiguration;
  CallConfig c = t_call_configs.back();
  t_call_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_mem = c.shared_mem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  if (kernel == nullptr) return Ret(cudaErrorInvalidValue);
  const xtsim::KernelInfo* k = xtsim::FindKernel(fun);
  if (k == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<xtsim::KernelInfo*>(k));
  return cudaSuccess;
}

XTSIM_STREAM_API(__cudaLaunchKernel,
                 (cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                  cudaStream_t stream),
                 _ptsz,
                 LaunchImpl(xtsim::FindKernelHandle(kernel), grid, block, shared_mem, stream,
                            false),
                 LaunchImpl(xtsim::FindKernelHandle(kernel), grid, block, shared_mem, stream,
                            true))
XTSIM_STREAM_API(cudaLaunchKernel,
                 (const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem,
                  cudaStream_t stream),
                 _ptsz, LaunchImpl(xtsim::FindKernel(func), grid, block, shared_mem, stream, false),
                 LaunchImpl(xtsim::FindKernel(func), grid, block, shared_mem, stream, true))
XTSIM_STREAM_API(cudaLaunchKernelExC,
                 (const cudaLaunchConfig_t* config, const void* func, void** args), _ptsz,
                 LaunchExImpl(config, func, false), LaunchExImpl(config, func, true))

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr || func == nullptr) return Ret(cudaErrorInvalidValue);
  const xtsim::KernelInfo* k = xtsim::FindKernel(func);
  if (k == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  *name = k->mangled.c_str();
  return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return Ret(cudaErrorInvalidValue);
  if (xtsim::FindKernel(func) == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  memset(attr, 0, sizeof(*attr));
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute, int) {
  return Ret(xtsim::FindKernel(func) == nullptr ? cudaErrorInvalidDeviceFunction : cudaSuccess);
}

cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache) {
  return Ret(xtsim::FindKernel(func) == nullptr ? cudaErrorInvalidDeviceFunction : cudaSuccess);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int block_size, size_t) {
  if (blocks == nullptr || block_size <= 0) return Ret(cudaErrorInvalidValue);
  if (xtsim::FindKernel(func) == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  *blocks = std::max(1, std::min(32, 2048 / block_size));
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                   int block_size, size_t smem,
                                                                   unsigned int) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, block_size, smem);
}

}  // extern "C"

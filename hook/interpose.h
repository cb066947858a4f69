// The machinery that turns one line of hooked_functions.inc into an exported shim. A shim
// resolves its real function lazily (dlsym RTLD_NEXT, typed by decltype of the vendor header's
// declaration), checks the reentrancy guard, calls the real function and talks to the recorder.
// Only shims_*.cc include this.
#ifndef XTIMER_HOOK_INTERPOSE_H_
#define XTIMER_HOOK_INTERPOSE_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cerrno>
#include <type_traits>

#include "hook/budget_decide.h"
#include "hook/capture_census.h"
#include "hook/describe.h"
#include "hook/driver_hooks.h"
#include "hook/nccl_handlers.h"
#include "hook/real.h"
#include "hook/recorder.h"

namespace xtimer {
namespace hook {

// The non-template overloads of the launch calls (cuda_runtime.h adds C++ templates).
using LaunchKernelFn = cudaError_t(const void*, dim3, dim3, void**, size_t, cudaStream_t);
using LaunchKernelExCFn = cudaError_t(const cudaLaunchConfig_t*, const void*, void**);

template <typename F>
struct ResultOf;
template <typename R, typename... A>
struct ResultOf<R(A...)> {
  using type = R;
};

inline bool IsOk(cudaError_t r) { return r == cudaSuccess; }
inline bool IsOk(cublasStatus_t r) { return r == CUBLAS_STATUS_SUCCESS; }
inline bool IsOk(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }
inline bool IsOk(CUresult r) { return r == CUDA_SUCCESS; }
// What a shim returns when the real library does not define the function.
inline cudaError_t Missing(cudaError_t*) { return cudaErrorNotSupported; }
inline cublasStatus_t Missing(cublasStatus_t*) { return CUBLAS_STATUS_NOT_SUPPORTED; }
inline ncclResult_t Missing(ncclResult_t*) { return ncclSystemError; }
inline CUresult Missing(CUresult*) { return CUDA_ERROR_NOT_SUPPORTED; }

// A call that is intercepted only to be passed on (listed for completeness of the lifecycle).
template <typename F, typename... A>
inline auto PassThrough(F real, A... a) {
  return real(a...);
}

// A stream operation timed with an event pair (copies, memsets, graphs, GEMMs).
template <typename Ret, typename Call, typename Describe>
inline Ret TimedCall(Call&& call, Describe&& describe) {
  if (!Enter()) return call();
  HookScope scope;
  int saved = errno;
  OpDesc d;
  Timing t;
  bool timed = false;
  bool capturing;
  if (describe(&d) && budget::Decide(d)) {
    OwnTimer own;
    if (CanTime(d.stream, &capturing)) timed = BeginTimed(d, &t);
  }
  errno = saved;
  Ret r = call();
  if (timed) {
    OwnTimer own;
    saved = errno;
    EndTimed(d, &t, IsOk(r), 0);
    errno = saved;
  }
  return r;
}

// A kernel launch: timed unless XTIMER_KERNEL_FILTER leaves the kernel out (or is off). `key`
// identifies the kernel (a runtime host function or cudaKernel_t, or a driver CUfunction);
// `classify(uint32_t* name_id)` decides for a key not seen before (KernelTimed,
// DriverKernelTimed). The decision is cached per key, so a launch that is not timed costs one
// lock-free probe. t_in_hook is set around the real call either way: the runtime launches
// through the driver, and that launch is this one.
template <typename Call, typename Classify>
inline auto KernelCall(Call&& call, const void* key, Classify&& classify, cudaStream_t stream) {
  if (!Enter()) return call();
  HookScope scope;
  KernelTable& kernels = Kernels();
  if (!kernels.filter_enabled()) return call();
  bool known;
  uint32_t name_id = 0;
  bool timed = kernels.Cached(key, &known, &name_id);
  if (__builtin_expect(known && !timed, 1)) return call();
  int saved = errno;
  if (!known) timed = classify(&name_id);
  if (!timed || !budget::Decide(format::OpKind::kKernel, budget::KernelSignature(key, stream))) {
    errno = saved;
    return call();
  }
  OpDesc d;
  d.name_id = name_id;
  d.kind = format::OpKind::kKernel;
  d.op = format::Operation::kKernelLaunch;
  d.stream = stream;
  d.flags = format::kFlagAsync;
  Timing t;
  bool began = false;
  bool capturing;
  {
    OwnTimer own;
    if (CanTime(stream, &capturing)) began = BeginTimed(d, &t);
  }
  errno = saved;
  auto r = call();
  if (began) {
    OwnTimer own;
    saved = errno;
    EndTimed(d, &t, IsOk(r), 0);
    errno = saved;
  }
  return r;
}

// A host-blocking call: the host time spent inside it.
template <typename Call>
inline cudaError_t SyncCall(Call&& call, format::Operation op, cudaStream_t stream) {
  if (!Enter()) return call();
  HookScope scope;
  int64_t begin = RealtimeNs();
  cudaError_t r = call();
  int64_t end = RealtimeNs();
  if (r == cudaSuccess) {
    ErrnoSaver saver;
    RecordHostSync(op, stream, begin, end);
  }
  return r;
}

// An NCCL collective or send/recv: sequence number, group membership, timing.
template <typename Call, typename Describe>
inline ncclResult_t NcclOpCall(Call&& call, const void* comm, Describe&& describe) {
  if (!Enter()) return call();
  HookScope scope;
  int saved = errno;
  OpDesc d;
  d.comm = LookupComm(comm);
  describe(&d);
  budget::CountCall(d.kind);
  bool capturing = false;
  if (InGroup()) {
    bool can_time;
    {
      OwnTimer own;  // the group's end decides and pays for timing or tracking
      own.set_timed(false);
      can_time = d.comm != nullptr && CanTime(d.stream, &capturing);
    }
    errno = saved;
    ncclResult_t r = call();
    saved = errno;
    if (IsOk(r) && d.comm != nullptr && !capturing) {
      AssignSeq(&d);
      if (can_time) AddGroupMember(d);
    }
    errno = saved;
    return r;
  }
  Timing t;
  bool timed = false;
  bool tracked = false;
  nccl_profiler::Launch* launch = nullptr;  // NCCL reports the completion (nccl_profiler.h)
  {
    OwnTimer own;  // the budget's fixed cost, timed or tracked (budget.h)
    own.set_timed(false);
    if (d.comm != nullptr && CanTime(d.stream, &capturing)) {
      timed = budget::DecideCollective(UpcomingSeq(d)) && BeginTimed(d, &t);
      tracked = !timed;
      if (tracked) {
        t.cpu_launch_ns = RealtimeNs();
        launch = nccl_profiler::Arm();
      }
    }
  }
  errno = saved;
  ncclResult_t r = call();
  saved = errno;
  {
    OwnTimer own;
    own.set_timed(false);
    if (IsOk(r) && d.comm != nullptr && !capturing) AssignSeq(&d);
    if (timed) EndTimed(d, &t, IsOk(r), 0);
    if (launch != nullptr && nccl_profiler::Seal(launch, IsOk(r) ? 1 : 0)) {
      if (!TrackByNccl(d, &t, 0, launch)) nccl_profiler::Release(launch);
      tracked = false;
    }
    if (tracked && IsOk(r)) TrackCompletion(d, &t, 0);
  }
  errno = saved;
  return r;
}

}  // namespace hook
}  // namespace xtimer

#define XT_UNUSED_ __attribute__((unused))

// Declares `name` (the _ptsz / _ptds twins are not declared by the headers in the default-stream
// mode we compile in), checks it has the function type `type_of`, and opens its definition;
// `real` is the real function in the body.
#define XT_SHIM_BEGIN(name, type_of, params)                                              \
  extern "C" __attribute__((visibility("default")))                                       \
  typename ::xtimer::hook::ResultOf<type_of>::type name params;                            \
  /* The shim has exactly the vendor declaration's type (else no overload converts). */  \
  static constexpr ::std::add_pointer_t<type_of> xt_typed_##name XT_UNUSED_ = &name;              \
  static ::xtimer::hook::Real<::std::add_pointer_t<type_of>> xt_real_##name(#name);                             \
  typename ::xtimer::hook::ResultOf<type_of>::type name params {                          \
    using XtRet = typename ::xtimer::hook::ResultOf<type_of>::type;                       \
    auto real = xt_real_##name.get();                                                     \
    if (__builtin_expect(real == nullptr, 0)) return ::xtimer::hook::Missing((XtRet*)0);

#define XT_GEN_TIMED(name, type_of, params, args, describe)                               \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::TimedCall<XtRet>([&] { return real args; },                      \
                                          [&](::xtimer::hook::OpDesc* d) { return describe; }); \
  }

#define XT_GEN_KERNEL(name, type_of, params, args, key, is_handle, stream)               \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::KernelCall(                                                      \
      [&] { return real args; }, key,                                                     \
      [&](uint32_t* id) { return ::xtimer::hook::KernelTimed(key, is_handle, id); }, stream); \
  }

#define XT_GEN_DRIVER_KERNEL(name, base, per_thread, type_of, params, args, function, stream) \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::KernelCall(                                                      \
      [&] { return real args; }, function,                                                \
      [&](uint32_t* id) { return ::xtimer::hook::DriverKernelTimed(function, id); }, stream); \
  }
#define XT_GEN_DRIVER_TIMED(name, base, per_thread, ...) XT_GEN_TIMED(name, __VA_ARGS__)
#define XT_GEN_DRIVER_CUSTOM(name, base, per_thread, ...) XT_GEN_CUSTOM(name, __VA_ARGS__)

// One entry of a shims file's table (shim_table.h): the exported name, the shim, and its real
// function.
#define XT_SHIM_ENTRY(name, ...)                                                          \
  {#name, nullptr, false, reinterpret_cast<void*>(xt_typed_##name),                    \
   []() -> void* { return reinterpret_cast<void*>(xt_real_##name.get_optional()); }},
#define XT_DRIVER_SHIM_ENTRY(name, base, per_thread, ...)                                 \
  {#name, base, per_thread, reinterpret_cast<void*>(xt_typed_##name),                  \
   []() -> void* { return reinterpret_cast<void*>(xt_real_##name.get_optional()); }},

#define XT_GEN_SYNC(name, type_of, params, args, op, stream)                              \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::SyncCall([&] { return real args; }, ::xtimer::format::Operation::op, \
                                  stream);                                                \
  }

#define XT_GEN_NCCL_OP(name, type_of, params, args, comm, describe)                       \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::NcclOpCall([&] { return real args; }, comm,                      \
                                    [&](::xtimer::hook::OpDesc* d) { describe; });        \
  }

#define XT_GEN_CUSTOM(name, type_of, params, args, handler)                               \
  XT_SHIM_BEGIN(name, type_of, params)                                                    \
  return ::xtimer::hook::handler;                                                         \
  }

#define XT_SKIP(...)

#endif  // XTIMER_HOOK_INTERPOSE_H_

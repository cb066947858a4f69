// The exported NCCL entry points: argument checks with NCCL's error codes, then comm.h, ops.h
// and group.h do the work. As in the real libnccl.so.2, each function is defined once as pncclX
// (the profiling name) and ncclX is a weak alias of it, so a profiler may override ncclX and
// still reach pncclX. (//test/gpusim links the generated weak "not implemented" fallbacks after
// this library, so these weak aliases win.)
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <strings.h>

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/nccl/comm.h"
#include "test/gpusim/nccl/datatypes.h"
#include "test/gpusim/nccl/faults.h"
#include "test/gpusim/nccl/group.h"
#include "test/gpusim/nccl/ops.h"
#include "test/gpusim/nccl/profiler_events.h"
#include "test/gpusim/nccl/shm.h"
#include "test/gpusim/sim_api_client.h"

// Defines pncclNAME and makes ncclNAME a weak alias of it.
#define NCCL_API(ret, name, ...)                                                             \
  extern "C" __attribute__((visibility("default"))) ret p##name(__VA_ARGS__);                \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"))) ret p##name(__VA_ARGS__)

namespace xtsim {
namespace nccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr unsigned kSimInfoMagic = 0x74685283;

// ncclGetLastError: the message of the most recent error of any thread, as in the real NCCL.
std::mutex g_last_error_mu;
std::string* g_last_error = new std::string;

// NCCL prints its WARN lines only with NCCL_DEBUG=WARN or more; we do the same (and always under
// XTIMER_SIM_VERBOSE).
bool NcclDebugWarn() {
  static const bool on = [] {
    const char* v = getenv("NCCL_DEBUG");
    return v != nullptr && (strcasecmp(v, "WARN") == 0 || strcasecmp(v, "INFO") == 0 ||
                            strcasecmp(v, "TRACE") == 0 || strcasecmp(v, "ABORT") == 0);
  }();
  return on;
}

void SetLastError(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_last_error_mu);
    *g_last_error = message;
  }
  if (NcclDebugWarn()) {
    Warn("NCCL WARN %s", message.c_str());
  } else {
    Debug("nccl: %s", message.c_str());
  }
}

std::string Format(const char* fmt, va_list ap) {
  char buf[512];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

// Records the message and returns `code`; inside a group the error also fails the group.
__attribute__((format(printf, 2, 3))) ncclResult_t Error(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string message = Format(fmt, ap);
  va_end(ap);
  SetLastError(message);
  if (InGroup()) RecordGroupError(code, message);
  return code;
}

ncclResult_t ErrorMessage(ncclResult_t code, const std::string& message) {
  return Error(code, "%s", message.c_str());
}

#define CHECK_ARG(cond, ...)                                     \
  do {                                                           \
    if (!(cond)) return Error(ncclInvalidArgument, __VA_ARGS__); \
  } while (0)

// The implementation behind a handle, or nullptr (with the error recorded in *result).
Comm* GetComm(ncclComm_t handle, const char* fn, ncclResult_t* result) {
  if (handle == nullptr) {
    *result = Error(ncclInvalidArgument, "%s: comm is NULL", fn);
    return nullptr;
  }
  if (handle->magic != ncclComm::kMagic || handle->impl == nullptr) {
    *result = Error(ncclInvalidArgument, "%s: comm %p is not a live communicator", fn,
                    static_cast<void*>(handle));
    return nullptr;
  }
  return handle->impl.get();
}

// A communicator whose rank and size are known (creation may still be completing in a group).
Comm* GetIdentifiedComm(ncclComm_t handle, const char* fn, ncclResult_t* result) {
  Comm* c = GetComm(handle, fn, result);
  if (c == nullptr) return nullptr;
  Comm::State s = c->state();
  if (s == Comm::State::kExchanging) s = (c->TryAdvance(), c->state());
  if (s == Comm::State::kFailed) {
    *result = ErrorMessage(ncclInvalidUsage,
                           std::string(fn) + ": communicator creation failed: " + c->error());
    return nullptr;
  }
  if (s == Comm::State::kExchanging) {
    *result = Error(ncclInvalidUsage,
                    "%s: communicator is still being created (ncclCommSplit in progress)", fn);
    return nullptr;
  }
  return c;
}

// A communicator that operations may be issued on now: ready, or (inside a group) joining.
Comm* GetUsableComm(ncclComm_t handle, const char* fn, ncclResult_t* result) {
  Comm* c = GetIdentifiedComm(handle, fn, result);
  if (c == nullptr) return nullptr;
  if (c->state() == Comm::State::kJoining && !InGroup()) {
    ncclResult_t r = c->blocking() ? c->Wait() : c->TryAdvance();
    if (r == ncclInProgress) {
      *result = Error(ncclInvalidUsage,
                      "%s: communicator initialization is still in progress "
                      "(poll ncclCommGetAsyncError until it returns ncclSuccess)",
                      fn);
      return nullptr;
    }
    if (r != ncclSuccess) {
      *result = ErrorMessage(r, std::string(fn) + ": communicator creation failed: " + c->error());
      return nullptr;
    }
  }
  if (c->aborted() || c->revoked.load()) {
    *result = Error(ncclInvalidUsage, "%s: communicator has been aborted or revoked", fn);
    return nullptr;
  }
  return c;
}

ncclResult_t ResolveReduction(ncclRedOp_t op, ncclDataType_t type, const Comm& c, const char* fn,
                              Reduction* out) {
  const TypeKernels& k = *KernelsFor(type);
  switch (op) {
    case ncclSum:
    case ncclProd:
    case ncclMax:
    case ncclMin:
      out->base = op;
      return ncclSuccess;
    case ncclAvg:
      // Floating point: every input is scaled by 1/nranks before summing (as the GPU does);
      // integers: sum, then divide.
      out->base = ncclSum;
      if (k.is_float) {
        out->scale = Reduction::Scale::kReciprocalOfNranks;
      } else {
        out->divide_by_nranks = true;
      }
      return ncclSuccess;
    default:
      break;
  }
  PreMulSum premulsum;
  if (!c.FindPreMulSum(op, &premulsum)) {
    return Error(ncclInvalidArgument, "%s: invalid reduction operator %d", fn,
                 static_cast<int>(op));
  }
  if (premulsum.datatype != type) {
    return Error(ncclInvalidArgument, "%s: operator %d was created for datatype %s, not %s", fn,
                 static_cast<int>(op), KernelsFor(premulsum.datatype)->name, k.name);
  }
  out->base = ncclSum;
  out->scale = Reduction::Scale::kPreMulSum;
  out->premulsum = premulsum;
  return ncclSuccess;
}

// The checks and fault knobs of an operation call; on success `op` is ready to defer or launch.
ncclResult_t Prepare(OpKind kind, ncclRedOp_t redop, Comm* c, Op* op) {
  const OpSpec& spec = SpecOf(kind);
  const char* fn = spec.name;
  if (spec.reduces) {
    ncclResult_t r = ResolveReduction(redop, op->datatype, *c, fn, &op->reduction);
    if (r != ncclSuccess) return r;
  }
  int peer = op->peer;
  if (spec.rooted || spec.p2p) {
    CHECK_ARG(peer >= 0 && peer < c->nranks(), "%s: invalid %s %d (nranks %d)", fn,
              spec.p2p ? "peer" : "root", peer, c->nranks());
  }
  bool sends = kind == OpKind::kSend || (!spec.p2p && (!spec.root_sends_only || c->rank() == peer));
  bool receives =
      kind == OpKind::kRecv || (!spec.p2p && (!spec.root_recvs_only || c->rank() == peer));
  CHECK_ARG(op->count == 0 || !sends || op->sendbuff != nullptr, "%s: sendbuff is NULL", fn);
  CHECK_ARG(op->count == 0 || !receives || op->recvbuff != nullptr, "%s: recvbuff is NULL", fn);
  cudaError_t stream_ok = Runtime().stream_check(op->stream, nullptr);
  if (stream_ok != cudaSuccess) {
    return Error(ncclUnhandledCudaError, "%s: invalid stream %p (CUDA error %d)", fn,
                 static_cast<void*>(op->stream), static_cast<int>(stream_ok));
  }
  if (!spec.p2p) {
    ncclResult_t injected =
        OnCollectiveCall(c->global_rank(), c->creation_index(), c->NextCollectiveCall());
    if (injected != ncclSuccess) {
      c->SetAsyncError(injected);
      return Error(injected, "%s: error injected by XTIMER_SIM_NCCL_ERROR", fn);
    }
  }
  return ncclSuccess;
}

// The profiler's API events for a prepared operation (NCCL 2.28.9 src/enqueue.cc taskAppend).
void AppendProfilerTasks(Comm* c, Op* op) {
  ProfilerComm* pc = c->profiler();
  if (pc == nullptr) return;
  ProfCall call{op->kind, op->sendbuff, op->recvbuff, op->count,
                op->datatype, op->peer, c->nranks(), c->rank(), op->stream,
                StreamCapturing(op->stream)};
  op->prof = ProfApiAppend(pc, call, GroupDepth() + 1);
}

// Everything every operation call does, framed as NCCL's ncclEnqueueCheck (an implicit group
// around the call): checks, fault knobs, then defer (in a group) or launch.
ncclResult_t Issue(OpKind kind, const void* sendbuff, void* recvbuff, size_t count,
                   ncclDataType_t datatype, ncclRedOp_t redop, int peer, ncclComm_t handle,
                   cudaStream_t stream) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetUsableComm(handle, SpecOf(kind).name, &result);
  if (c == nullptr) return result;
  ProfApiEnter();
  ncclResult_t r = KernelsFor(datatype) != nullptr
                       ? ncclSuccess
                       : Error(ncclInvalidArgument, "%s: invalid datatype %d", SpecOf(kind).name,
                               static_cast<int>(datatype));
  // An invalid datatype is never stored in an enum (UBSan).
  ncclDataType_t type = r == ncclSuccess ? datatype : ncclInt8;
  Op op{kind, handle->impl, sendbuff, recvbuff, count, type, Reduction{}, peer, stream, {}};
  if (r == ncclSuccess) r = Prepare(kind, redop, c, &op);
  if (r == ncclSuccess) AppendProfilerTasks(c, &op);
  ProfGroupEndEnter();
  if (r == ncclSuccess && InGroup()) {
    DeferOp(std::move(op));
  } else if (r == ncclSuccess) {
    std::vector<Op> ops;
    ops.push_back(std::move(op));
    std::string error;
    r = Launch(std::move(ops), &error);
    if (r != ncclSuccess) r = ErrorMessage(r, error);
  }
  ProfGroupEndExit();
  return r;
}

// Reads a config field only when the caller's (possibly older, smaller) struct has it.
#define CONFIG_HAS(config, field) \
  (offsetof(ncclConfig_t, field) + sizeof((config)->field) <= (config)->size)

bool UndefOrIn(int v, int lo, int hi) { return v == NCCL_CONFIG_UNDEF_INT || (v >= lo && v <= hi); }

ncclResult_t ParseConfig(const ncclConfig_t* config, const CommOptions& defaults, const char* fn,
                         CommOptions* out) {
  *out = defaults;
  if (config == nullptr) return ncclSuccess;
  CHECK_ARG(config->magic == kConfigMagic,
            "%s: config was not initialized with NCCL_CONFIG_INITIALIZER (magic 0x%x)", fn,
            config->magic);
  CHECK_ARG(config->size >= offsetof(ncclConfig_t, blocking) + sizeof(int),
            "%s: config size %zu is too small", fn, config->size);
  struct IntField {
    const char* name;
    size_t offset;
    int lo, hi;
  };
  static const IntField kFields[] = {
      {"blocking", offsetof(ncclConfig_t, blocking), 0, 1},
      {"cgaClusterSize", offsetof(ncclConfig_t, cgaClusterSize), 0, 8},
      {"minCTAs", offsetof(ncclConfig_t, minCTAs), 1, 1 << 16},
      {"maxCTAs", offsetof(ncclConfig_t, maxCTAs), 1, 1 << 16},
      {"splitShare", offsetof(ncclConfig_t, splitShare), 0, 1},
      {"collnetEnable", offsetof(ncclConfig_t, collnetEnable), 0, 1},
      {"CTAPolicy", offsetof(ncclConfig_t, CTAPolicy), 0, 3},
      {"shrinkShare", offsetof(ncclConfig_t, shrinkShare), 0, 1},
      {"nvlsCTAs", offsetof(ncclConfig_t, nvlsCTAs), 1, 1 << 16},
      {"nChannelsPerNetPeer", offsetof(ncclConfig_t, nChannelsPerNetPeer), 1, 1 << 16},
      {"nvlinkCentricSched", offsetof(ncclConfig_t, nvlinkCentricSched), 0, 1},
  };
  for (const IntField& f : kFields) {
    if (f.offset + sizeof(int) > config->size) continue;
    int v;
    memcpy(&v, reinterpret_cast<const char*>(config) + f.offset, sizeof(v));
    CHECK_ARG(UndefOrIn(v, f.lo, f.hi), "%s: invalid config %s value %d", fn, f.name, v);
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) out->blocking = config->blocking != 0;
  if (CONFIG_HAS(config, commName) && config->commName != nullptr &&
      config->commName != NCCL_CONFIG_UNDEF_PTR) {
    out->has_name = true;  // handed to the profiler plugin's init()
    out->name = config->commName;
  }
  if (CONFIG_HAS(config, maxCTAs) && config->minCTAs != NCCL_CONFIG_UNDEF_INT &&
      config->maxCTAs != NCCL_CONFIG_UNDEF_INT) {
    CHECK_ARG(config->minCTAs <= config->maxCTAs, "%s: config minCTAs %d exceeds maxCTAs %d", fn,
              config->minCTAs, config->maxCTAs);
  }
  return ncclSuccess;
}

CommOptions DefaultOptions() {
  CommOptions o;
  o.blocking = EnvInt("NCCL_COMM_BLOCKING", 1) != 0;
  o.cuda_dev = Runtime().current_device();
  return o;
}

// Completes a creation the way the caller asked for: deferred to ncclGroupEnd, blocking, or
// non-blocking (ncclInProgress until ncclCommGetAsyncError says otherwise).
ncclResult_t FinishCreation(const std::shared_ptr<Comm>& c, const char* fn) {
  if (InGroup()) {
    DeferCreation(c);
    return ncclSuccess;
  }
  ncclResult_t r = c->blocking() || c->is_bystander() ? c->Wait() : c->TryAdvance();
  if (r != ncclSuccess && r != ncclInProgress) {
    return ErrorMessage(r, std::string(fn) + ": " + c->error());
  }
  return r;
}

ncclComm_t NewHandle(std::shared_ptr<Comm> impl) {
  auto* handle = new ncclComm;
  handle->impl = std::move(impl);
  return handle;
}

void DeleteHandle(ncclComm_t handle) {
  handle->magic = 0;
  handle->impl.reset();
  delete handle;
}

// A root communicator (ncclCommInitRank*, ncclCommInitAll).
ncclResult_t InitRoot(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank,
                      const ncclConfig_t* config, const char* fn) {
  CHECK_ARG(out != nullptr, "%s: comm is NULL", fn);
  CHECK_ARG(nranks >= 1, "%s: invalid nranks %d", fn, nranks);
  CHECK_ARG(rank >= 0 && rank < nranks, "%s: invalid rank %d (nranks %d)", fn, rank, nranks);
  CommKey key;
  CHECK_ARG(DecodeUniqueId(*id, &key), "%s: the unique id was not produced by ncclGetUniqueId", fn);
  CommOptions options;
  ncclResult_t r = ParseConfig(config, DefaultOptions(), fn, &options);
  if (r != ncclSuccess) return r;
  std::shared_ptr<Comm> c = Comm::CreateRoot(key, nranks, rank, options);
  if (c->state() == Comm::State::kFailed) {
    return ErrorMessage(c->TryAdvance(), std::string(fn) + ": " + c->error());
  }
  r = FinishCreation(c, fn);
  *out = r == ncclSuccess || r == ncclInProgress ? NewHandle(c) : nullptr;
  return r;
}

ncclResult_t CheckExcludeList(const Comm& c, const int* list, int count, std::vector<int>* out) {
  const char* fn = "ncclCommShrink";
  CHECK_ARG(count >= 0, "%s: invalid excludeRanksCount %d", fn, count);
  CHECK_ARG(count == 0 || list != nullptr, "%s: excludeRanksList is NULL", fn);
  out->assign(list, list + count);
  std::sort(out->begin(), out->end());
  for (size_t i = 0; i < out->size(); ++i) {
    int r = (*out)[i];
    CHECK_ARG(r >= 0 && r < c.nranks(), "%s: invalid excluded rank %d (nranks %d)", fn, r,
              c.nranks());
    CHECK_ARG(i == 0 || (*out)[i - 1] != r, "%s: rank %d is excluded twice", fn, r);
    CHECK_ARG(r != c.rank(), "%s: rank %d excludes itself (only survivors call ncclCommShrink)", fn,
              r);
  }
  return ncclSuccess;
}

}  // namespace
}  // namespace nccl
}  // namespace xtsim

using xtsim::nccl::Comm;
using xtsim::nccl::CommOptions;
using xtsim::nccl::Error;
using xtsim::nccl::ErrorMessage;
using xtsim::nccl::GetComm;
using xtsim::nccl::GetIdentifiedComm;
using xtsim::nccl::GetUsableComm;
using xtsim::nccl::Issue;
using xtsim::nccl::OpKind;

// ---------------------------------------------------------------------------------------------
// Library and error information

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  CHECK_ARG(version != nullptr, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  // Copied per thread so the pointer stays valid while other threads record errors.
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(xtsim::nccl::g_last_error_mu);
  copy = *xtsim::nccl::g_last_error;
  return copy.c_str();
}

NCCL_API(void, ncclResetDebugInit) {}

// ---------------------------------------------------------------------------------------------
// Communicator creation and destruction

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  CHECK_ARG(uniqueId != nullptr, "ncclGetUniqueId: uniqueId is NULL");
  xtsim::nccl::SweepStaleSegments();
  *uniqueId = xtsim::nccl::EncodeUniqueId(xtsim::nccl::RandomKey());
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return xtsim::nccl::InitRoot(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return xtsim::nccl::InitRoot(comm, nranks, &commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankScalable";
  CHECK_ARG(nId >= 1, "%s: invalid nId %d", fn, nId);
  CHECK_ARG(commIds != nullptr, "%s: commIds is NULL", fn);
  // Several ids only spread the real bootstrap's load; every rank passes the same list, so the
  // first one names the communicator.
  return xtsim::nccl::InitRoot(newcomm, nranks, &commIds[0], myrank, config, fn);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  CHECK_ARG(comms != nullptr, "%s: comms is NULL", fn);
  CHECK_ARG(ndev >= 1, "%s: invalid ndev %d", fn, ndev);
  for (int i = 0; devlist != nullptr && i < ndev; ++i) {
    CHECK_ARG(devlist[i] >= 0, "%s: invalid device %d", fn, devlist[i]);
    for (int j = 0; j < i; ++j) {
      if (devlist[j] == devlist[i]) {
        return Error(ncclInvalidUsage, "%s: duplicate device %d in devlist", fn, devlist[i]);
      }
    }
  }
  xtsim::nccl::CommKey key = xtsim::nccl::RandomKey();
  std::vector<std::shared_ptr<Comm>> created;
  for (int i = 0; i < ndev; ++i) {
    CommOptions options;
    options.cuda_dev = devlist != nullptr ? devlist[i] : i;
    created.push_back(Comm::CreateRoot(key, ndev, i, options));
  }
  // Every rank has attached, so waiting for them one after the other cannot deadlock.
  for (const auto& c : created) {
    ncclResult_t r = c->Wait();
    if (r != ncclSuccess) return ErrorMessage(r, std::string(fn) + ": " + c->error());
  }
  for (int i = 0; i < ndev; ++i) comms[i] = xtsim::nccl::NewHandle(created[static_cast<size_t>(i)]);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  ncclResult_t result = ncclSuccess;
  // A revoked communicator may still be split (only its operations are refused).
  Comm* parent = GetIdentifiedComm(comm, fn, &result);
  if (parent == nullptr) return result;
  CHECK_ARG(newcomm != nullptr, "%s: newcomm is NULL", fn);
  CHECK_ARG(color >= 0 || color == NCCL_SPLIT_NOCOLOR, "%s: invalid color %d", fn, color);
  if (parent->state() != Comm::State::kReady) {
    return Error(ncclInvalidUsage, "%s: the parent communicator is not ready yet", fn);
  }
  CommOptions inherited;
  inherited.blocking = parent->blocking();
  inherited.cuda_dev = parent->cuda_dev();
  CommOptions options;
  ncclResult_t r = xtsim::nccl::ParseConfig(config, inherited, fn, &options);
  if (r != ncclSuccess) return r;
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) {
    // Not part of any child, but the exchange through the parent still needs this rank.
    return xtsim::nccl::FinishCreation(Comm::CreateSplitBystander(*parent), fn);
  }
  std::shared_ptr<Comm> child = Comm::CreateSplitChild(*parent, color, key, options);
  r = xtsim::nccl::FinishCreation(child, fn);
  if (r == ncclSuccess || r == ncclInProgress) *newcomm = xtsim::nccl::NewHandle(child);
  return r;
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  ncclResult_t result = ncclSuccess;
  Comm* parent = GetComm(comm, fn, &result);
  if (parent == nullptr) return result;
  CHECK_ARG(newcomm != nullptr, "%s: newcomm is NULL", fn);
  CHECK_ARG(shrinkFlags == NCCL_SHRINK_DEFAULT || shrinkFlags == NCCL_SHRINK_ABORT,
            "%s: invalid shrinkFlags %d", fn, shrinkFlags);
  if (parent->state() != Comm::State::kReady) {
    return Error(ncclInvalidUsage, "%s: the parent communicator is not ready", fn);
  }
  std::vector<int> exclude;
  ncclResult_t r =
      xtsim::nccl::CheckExcludeList(*parent, excludeRanksList, excludeRanksCount, &exclude);
  if (r != ncclSuccess) return r;
  CommOptions inherited;
  inherited.blocking = parent->blocking();
  inherited.cuda_dev = parent->cuda_dev();
  CommOptions options;
  r = xtsim::nccl::ParseConfig(config, inherited, fn, &options);
  if (r != ncclSuccess) return r;
  // NCCL_SHRINK_ABORT: operations of the parent still waiting (for an excluded rank) give up.
  if (shrinkFlags == NCCL_SHRINK_ABORT) parent->Abort();
  std::shared_ptr<Comm> child = Comm::CreateShrinkChild(*parent, exclude, options);
  if (child->state() == Comm::State::kFailed) {
    return ErrorMessage(child->TryAdvance(), std::string(fn) + ": " + child->error());
  }
  *newcomm = nullptr;
  r = xtsim::nccl::FinishCreation(child, fn);
  if (r == ncclSuccess || r == ncclInProgress) *newcomm = xtsim::nccl::NewHandle(child);
  return r;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  ncclResult_t result = ncclSuccess;
  if (GetComm(comm, "ncclCommFinalize", &result) == nullptr) return result;
  // Operations complete on their streams on their own; nothing else is in flight to flush.
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t result = ncclSuccess;
  if (GetComm(comm, "ncclCommDestroy", &result) == nullptr) return result;
  // Queued and captured operations keep the implementation (and the shared memory) alive.
  comm->impl->FinalizeProfiler();
  xtsim::nccl::DeleteHandle(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, "ncclCommAbort", &result);
  if (c == nullptr) return result;
  c->Abort();
  c->FinalizeProfiler();
  xtsim::nccl::DeleteHandle(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, "ncclCommRevoke", &result);
  if (c == nullptr) return result;
  CHECK_ARG(revokeFlags == NCCL_REVOKE_DEFAULT, "ncclCommRevoke: invalid revokeFlags %d",
            revokeFlags);
  c->revoked.store(true);
  c->Abort();
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Communicator queries

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, "ncclCommGetAsyncError", &result);
  if (c == nullptr) return result;
  CHECK_ARG(asyncError != nullptr, "ncclCommGetAsyncError: asyncError is NULL");
  ncclResult_t creation = c->TryAdvance();
  *asyncError = creation != ncclSuccess ? creation : c->async_error();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetIdentifiedComm(comm, "ncclCommCount", &result);
  if (c == nullptr) return result;
  CHECK_ARG(count != nullptr, "ncclCommCount: count is NULL");
  *count = c->nranks();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetIdentifiedComm(comm, "ncclCommUserRank", &result);
  if (c == nullptr) return result;
  CHECK_ARG(rank != nullptr, "ncclCommUserRank: rank is NULL");
  *rank = c->rank();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, "ncclCommCuDevice", &result);
  if (c == nullptr) return result;
  CHECK_ARG(device != nullptr, "ncclCommCuDevice: device is NULL");
  *device = c->cuda_dev();
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Reduction operators, memory and registration

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(op != nullptr, "%s: op is NULL", fn);
  CHECK_ARG(scalar != nullptr, "%s: scalar is NULL", fn);
  const xtsim::nccl::TypeKernels* k = xtsim::nccl::KernelsFor(datatype);
  CHECK_ARG(k != nullptr, "%s: invalid datatype %d", fn, static_cast<int>(datatype));
  CHECK_ARG(residence == ncclScalarDevice || residence == ncclScalarHostImmediate,
            "%s: invalid residence %d", fn, static_cast<int>(residence));
  xtsim::nccl::PreMulSum p{};
  p.datatype = datatype;
  p.on_device = residence == ncclScalarDevice;
  if (p.on_device) {
    p.device_scalar = scalar;
  } else {
    memcpy(p.scalar, scalar, k->size);
  }
  *op = c->AddPreMulSum(p);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(static_cast<int>(op) >= ncclNumOps, "%s: operator %d is built in", fn,
            static_cast<int>(op));
  CHECK_ARG(c->RemovePreMulSum(op), "%s: operator %d was not created on this communicator", fn,
            static_cast<int>(op));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  CHECK_ARG(ptr != nullptr, "ncclMemAlloc: ptr is NULL");
  CHECK_ARG(size > 0, "ncclMemAlloc: size is 0");
  cudaError_t err = xtsim::Runtime().device_malloc(ptr, size);
  if (err != cudaSuccess) {
    return Error(ncclUnhandledCudaError,
                 "ncclMemAlloc: allocating %zu bytes failed (CUDA error %d)", size,
                 static_cast<int>(err));
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  cudaError_t err = xtsim::Runtime().device_free(ptr);
  if (err != cudaSuccess) {
    return Error(ncclUnhandledCudaError, "ncclMemFree: freeing %p failed (CUDA error %d)", ptr,
                 static_cast<int>(err));
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  const char* fn = "ncclCommRegister";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(buff != nullptr, "%s: buff is NULL", fn);
  CHECK_ARG(size > 0, "%s: size is 0", fn);
  CHECK_ARG(handle != nullptr, "%s: handle is NULL", fn);
  *handle = c->AddRegistration(buff, size, 0, false);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(handle != nullptr && c->RemoveRegistration(handle, false),
            "%s: handle %p is not registered with this communicator", fn, handle);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(buff != nullptr, "%s: buff is NULL", fn);
  CHECK_ARG(size > 0, "%s: size is 0", fn);
  CHECK_ARG(win != nullptr, "%s: win is NULL", fn);
  CHECK_ARG((winFlags & ~NCCL_WIN_COLL_SYMMETRIC) == 0, "%s: invalid winFlags 0x%x", fn, winFlags);
  *win = c->AddRegistration(buff, size, winFlags, true);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  const char* fn = "ncclCommWindowDeregister";
  ncclResult_t result = ncclSuccess;
  Comm* c = GetComm(comm, fn, &result);
  if (c == nullptr) return result;
  CHECK_ARG(win != nullptr && c->RemoveRegistration(win, true),
            "%s: window %p is not registered with this communicator", fn, static_cast<void*>(win));
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Operations. `count` is what the engine calls a block (ops.h): the per-rank element count.

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
               stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
               stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
               stream);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return Issue(OpKind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

// ---------------------------------------------------------------------------------------------
// Groups

NCCL_API(ncclResult_t, ncclGroupStart) {
  xtsim::nccl::GroupStart();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd) {
  std::string error;
  ncclResult_t r = xtsim::nccl::GroupEnd(nullptr, &error);
  if (r != ncclSuccess && r != ncclInProgress) ErrorMessage(r, error);
  return r;
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  const char* fn = "ncclGroupSimulateEnd";
  CHECK_ARG(simInfo != nullptr, "%s: simInfo is NULL", fn);
  CHECK_ARG(simInfo->magic == xtsim::nccl::kSimInfoMagic,
            "%s: simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER", fn);
  std::string error;
  ncclResult_t r = xtsim::nccl::GroupEnd(simInfo, &error);
  if (r != ncclSuccess && r != ncclInProgress) ErrorMessage(r, error);
  return r;
}

#include "hook/recorder.h"

#include <pthread.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "hook/crash_report.h"
#include "hook/cuda_api.h"
#include "hook/exit_marker.h"
#include "hook/log.h"
#include "hook/poller.h"
#include "hook/python_exception.h"
#include "hook/python_trace.h"
#include "hook/stack_capture.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {

State* g_state = nullptr;  // never freed: shims may run during exit
std::atomic<int> g_mode{kUninit};
KernelTable* g_kernels = nullptr;
__thread bool t_in_hook __attribute__((tls_model("initial-exec"), visibility("hidden"))) =
    false;
// The device this thread last had current when the hook asked; host-sync records use it when the
// application has an error pending (the hook then makes no CUDA call of its own).
__thread int t_device __attribute__((tls_model("initial-exec"), visibility("hidden"))) = -1;

namespace {

std::mutex g_init_mu;

void Warn(const char* message) { LogLine("%s", message); }

void AtForkChild() {
  // The child neither inherits a poller (threads do not survive fork) nor may it write the
  // parent's ring: it passes every call through.
  g_mode.store(kOff, std::memory_order_relaxed);
  if (g_state != nullptr) {
    int fd = g_state->socket_fd.exchange(-1);
    if (fd >= 0) close(fd);  // the daemon must see the parent's connection end with the parent
  }
}

format::RingHeader* RingHeaderNow() {
  State* s = g_state;
  // getpid: a forked child inherits the mapping and the handlers but must not mark the parent.
  if (s == nullptr || s->poller == nullptr || getpid() != s->pid) return nullptr;
  return s->poller->header();
}

// The daemon connection, for a crash report (-1 in a forked child, whose socket_fd is -1).
int DaemonSocketNow() {
  State* s = g_state;
  if (s == nullptr || getpid() != s->pid) return -1;
  return s->socket_fd.load(std::memory_order_acquire);
}

// An on_exit handler: it learns the exit status, which it leaves in the ring for the daemon
// before the connection closes (hook/exit_marker.h).
void AtExit(int status, void*) {
  State* s = g_state;
  if (s == nullptr || getpid() != s->pid || g_mode.load() != kOn) return;
  Flush(s->config.exit_flush_ms);
  MarkExited(RingHeaderNow(), status);
  g_mode.store(kOff);
  if (s->poller != nullptr) s->poller->Stop();
}

// Clears an error our own CUDA call left in the thread's last-error slot. The caller has checked
// that the application had none before.
inline void ClearOurError() { Api().get_last_error(); }

// Makes `device` current on the calling thread for the life of the object, when it is not.
class DeviceSwitch {
 public:
  explicit DeviceSwitch(int device) {
    const CudaApi& api = Api();
    ok_ = api.get_device(&previous_) == cudaSuccess;
    if (ok_ && previous_ != device) {
      ok_ = api.set_device(device) == cudaSuccess;
      switched_ = ok_;
    }
  }
  ~DeviceSwitch() {
    if (switched_ && Api().set_device(previous_) != cudaSuccess) ClearOurError();
  }
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = false;
  bool switched_ = false;
};

// Sets ds->ref_event and ds->ref_host_ns, the host time at which the event completed. An event
// on the idle `stream` completes once its record is submitted: the host time right after the call
// returns is at or after it, so no op's GPU start maps before its own launch (an op on an idle
// stream starts after the hook read its launch time and recorded its start event). The error is
// the call's duration; a first call (lazy binding, cold caches) or a preemption inside it would
// shift every GPU time of the process by tens of microseconds, so the tightest of a few tries is
// kept. Cold: once per device.
bool AnchorHostClock(DeviceState* ds, cudaStream_t stream) {
  constexpr int kTries = 8;
  const CudaApi& api = Api();
  cudaEvent_t spare = nullptr;
  if (!ds->pool.Pop(&spare)) return false;
  int64_t best_window = INT64_MAX;
  bool ok = true;
  for (int i = 0; i < kTries && ok; ++i) {
    const int64_t before = RealtimeNs();
    ok = api.event_record(spare, stream) == cudaSuccess;
    const int64_t after = RealtimeNs();
    if (ok && after - before < best_window) {
      best_window = after - before;
      std::swap(spare, ds->ref_event);  // the tightest recording so far is never re-recorded
      ds->ref_host_ns = after;
    }
  }
  ds->pool.Push(spare);
  return ok && api.event_synchronize(ds->ref_event) == cudaSuccess;
}

DeviceState* InitDevice(int device) {
  State* s = g_state;
  std::lock_guard<std::mutex> lock(s->device_mu);
  DeviceState* ds = s->devices[device].load(std::memory_order_acquire);
  if (ds != nullptr) return ds;
  const CudaApi& api = Api();
  ds = new DeviceState(device);
  // The anchor's synchronization is a potentially unsafe call: relaxed, it neither fails nor
  // invalidates a capture that this or another application thread has under way.
  CaptureModeScope relaxed(cudaStreamCaptureModeRelaxed);
  // The events must belong to `device`, which need not be the thread's current one (a
  // communicator's op issued while another device is current).
  DeviceSwitch on_device(device);
  bool ok = on_device.ok() && GrowEventPool(ds, kInitialEvents) == kInitialEvents &&
            GrowMarkPool(ds, kInitialMarks) == kInitialMarks;
  // Reference for host-clock alignment: an event on a private idle stream, completed at once.
  cudaStream_t ref_stream = nullptr;
  if (ok) ok = api.stream_create_with_flags(&ref_stream, cudaStreamNonBlocking) == cudaSuccess;
  if (ok) ok = api.event_create_with_flags(&ds->ref_event, cudaEventDefault) == cudaSuccess;
  if (ok) ok = AnchorHostClock(ds, ref_stream);
  if (!ok) {
    ClearOurError();
    Warn("cannot create timing events on this device; its ops are not timed");
  }
  ds->ok = ok;
  s->devices[device].store(ds, std::memory_order_release);
  if (device >= s->device_end.load(std::memory_order_relaxed)) {
    s->device_end.store(device + 1, std::memory_order_release);
  }
  return ds;
}

inline DeviceState* DeviceFor(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  DeviceState* ds = g_state->devices[device].load(std::memory_order_acquire);
  if (__builtin_expect(ds == nullptr, 0)) ds = InitDevice(device);
  return ds->ok ? ds : nullptr;
}

void FillOpRecord(const OpDesc& d, int device, int64_t cpu_launch_ns, uint32_t group_id,
                  format::OpRecord* r) {
  r->version = format::kRecordVersion;
  r->type = static_cast<uint8_t>(format::RecordType::kOp);
  r->kind = static_cast<uint8_t>(d.kind);
  r->op = static_cast<uint16_t>(d.op);
  r->dtype = static_cast<uint8_t>(d.dtype);
  r->flags = d.flags | (group_id != 0 ? format::kFlagInGroup : 0);
  r->device = device;
  r->name_id = d.name_id;
  r->stream = reinterpret_cast<uint64_t>(d.stream);
  r->cpu_launch_ns = cpu_launch_ns;
  r->gpu_start_ns = 0;
  r->duration_ns = 0;
  r->bytes = d.bytes;
  r->m = d.m;
  r->n = d.n;
  r->k = d.k;
  r->batch = d.batch;
  r->comm_id = d.comm != nullptr ? d.comm->id : 0;
  r->seq = d.seq;
  r->peer = d.peer;
  r->root = d.root;
  r->group_id = group_id;
  r->comm_size = d.comm != nullptr ? d.comm->size : 0;
  r->count = d.count;
}

}  // namespace


void SetStateForTesting(State* s) {
  g_state = s;
  g_kernels = s != nullptr ? &s->kernels : nullptr;
}

namespace {

// Adds up to `n` events made with `flags` on ds's device to `pool` (room for `max`), counting
// them in `created`.
size_t GrowPool(DeviceState* ds, BoundedQueue<cudaEvent_t>* pool, std::atomic<size_t>* created,
                unsigned flags, size_t max, size_t n) {
  const CudaApi& api = Api();
  DeviceSwitch on_device(ds->device);
  if (!on_device.ok()) {
    ClearOurError();
    return 0;
  }
  size_t added = 0;
  const size_t had = created->load(std::memory_order_relaxed);
  for (; added < n && had + added < max; ++added) {
    cudaEvent_t e = nullptr;
    if (api.event_create_with_flags(&e, flags) != cudaSuccess) {
      ClearOurError();
      break;
    }
    pool->Push(e);  // cannot fail: the pool has room for `max`
  }
  created->store(had + added, std::memory_order_relaxed);
  return added;
}

}  // namespace

size_t GrowEventPool(DeviceState* ds, size_t n) {
  return GrowPool(ds, &ds->pool, &ds->created, cudaEventDefault, kMaxEvents, n);
}

size_t GrowMarkPool(DeviceState* ds, size_t n) {
  return GrowPool(ds, &ds->marks, &ds->marks_created, cudaEventDisableTiming, kMaxMarks, n);
}

bool InitSlow() {
  ErrnoSaver saver;  // reading the environment parses numbers (strtoll sets errno)
  std::lock_guard<std::mutex> lock(g_init_mu);
  int m = g_mode.load();
  if (m != kUninit) return m == kOn;
  auto* s = new State();
  s->config = ReadConfig([](const char* name) -> const char* { return getenv(name); }, &Warn);
  s->pid = getpid();
  if (s->config.disabled) {
    g_state = s;
    g_kernels = &s->kernels;
    g_mode.store(kOff);
    return false;
  }
  if (s->config.kernels && !s->kernels.SetFilter(s->config.kernel_filter)) {
    Warn(("XTIMER_KERNEL_FILTER is not a valid ECMAScript regex; no kernel is timed: " +
          s->config.kernel_filter)
             .c_str());
  }
  ResolveCudart();  // now, outside any hot path, when the runtime is already loaded
  g_state = s;
  g_kernels = &s->kernels;
  s->poller = new Poller(s);
  s->poller->Start();
  pthread_atfork(nullptr, nullptr, &AtForkChild);
  on_exit(&AtExit, nullptr);
  std::string crash_error;
  if (!PrepareCrashReports(&DaemonSocketNow, &crash_error)) {
    Warn(("no crash reports: " + crash_error).c_str());
  }
  if (!InstallFatalSignalMarkers(&RingHeaderNow)) {
    Warn("cannot install the fatal-signal markers; a crash will read as a lost connection");
  }
  std::string python_error;
  if (!InstallPythonExceptionReports(&python_error)) {
    Warn(("no reports of uncaught Python exceptions: " + python_error).c_str());
  }
  std::string trace_error;
  if (!s->config.python_trace.empty() &&
      !InstallPythonTracing(s->config.python_trace, s->config.python_trace_explicit,
                            &trace_error)) {
    Warn(("no Python tracing: " + trace_error).c_str());
  }
  std::string stack_error;
  if (s->config.stack_signal > 0 && !InstallStackSignal(s->config.stack_signal, &stack_error)) {
    Warn(("no native stack capture: " + stack_error).c_str());
  }
  g_mode.store(kOn);
  return true;
}

const Config& GetConfig() { return g_state->config; }
CommRegistry& Comms() { return g_state->comms; }
uint32_t NextGroupId() { return g_state->group_counter.fetch_add(1) + 1; }
uint64_t NextInitAllCounter() { return g_state->initall_counter.fetch_add(1); }

namespace {

// Enqueue's in-place form: fill(Pending*) writes the entry in its queue cell.
inline void CountTimed(format::OpKind kind) {
  g_state->op_timed[static_cast<uint8_t>(kind) & (format::kOpKindSlots - 1)].fetch_add(
      1, std::memory_order_relaxed);
}

// Whether a stream of the process may be capturing (State::captures).
inline bool CaptureMayExist() {
  return g_state->captures.load(std::memory_order_acquire) != 0 ||
         g_state->capture_unknown.load(std::memory_order_relaxed);
}

template <typename Fill>
bool EnqueueWith(Fill&& fill) {
  if (g_state->queue.PushWith(fill)) {
    g_state->queued.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  g_state->queue_dropped.fetch_add(1, std::memory_order_relaxed);
  CountUntimed(format::UntimedCause::kQueueFull);
  return false;
}

}  // namespace

bool Enqueue(const Pending& p) {
  return EnqueueWith([&p](Pending* cell) { *cell = p; });
}

void CaptureEnded() {
  State* s = g_state;
  if (s->captures.fetch_sub(1, std::memory_order_acq_rel) <= 0) {
    s->captures.fetch_add(1, std::memory_order_acq_rel);
    s->capture_unknown.store(true, std::memory_order_relaxed);
  }
}

bool CanTime(cudaStream_t stream, bool* capturing) {
  *capturing = false;
  if (!CudartReady()) {
    CountUntimed(format::UntimedCause::kNoRuntime);
    return false;
  }
  const CudaApi& api = Api();
  if (api.peek_at_last_error() != cudaSuccess) {
    CountUntimed(format::UntimedCause::kAppError);
    return false;
  }
  if (!CaptureMayExist()) return true;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (api.stream_is_capturing(stream, &status) != cudaSuccess) {
    ClearOurError();
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  if (status != cudaStreamCaptureStatusNone) {
    *capturing = true;
    return false;
  }
  return true;
}

namespace {

// The device `d` runs on: a communicator's op on the communicator's device (one thread may drive
// several, e.g. ncclCommInitAll + a group); anything else on the current device. False (counted)
// when the runtime cannot say.
bool OpDevice(const OpDesc& d, int* device) {
  if (d.comm != nullptr && d.comm->resolved.load(std::memory_order_acquire) &&
      d.comm->device >= 0) {
    *device = d.comm->device;
    return true;
  }
  if (Api().get_device(device) != cudaSuccess) {
    ClearOurError();
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  t_device = *device;
  return true;
}

}  // namespace

bool BeginTimed(const OpDesc& d, Timing* t) {
  const CudaApi& api = Api();
  if (!OpDevice(d, &t->device)) return false;
  DeviceState* ds = DeviceFor(t->device);
  if (ds == nullptr) {
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  if (!ds->pool.Pop(&t->start)) {
    CountUntimed(format::UntimedCause::kNoEvent);
    return false;
  }
  if (!ds->pool.Pop(&t->end)) {
    ds->pool.Push(t->start);
    CountUntimed(format::UntimedCause::kNoEvent);
    return false;
  }
  t->cpu_launch_ns = RealtimeNs();
  if (api.event_record(t->start, d.stream) != cudaSuccess) {
    ClearOurError();
    ds->pool.Push(t->start);
    ds->pool.Push(t->end);
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  return true;
}

void EndTimed(const OpDesc& d, Timing* t, bool call_ok, uint32_t group_id) {
  DeviceState* ds = g_state->devices[t->device].load(std::memory_order_acquire);
  const CudaApi& api = Api();
  if (call_ok && api.event_record(t->end, d.stream) != cudaSuccess) {
    ClearOurError();
    CountUntimed(format::UntimedCause::kCudaError);
    call_ok = false;
  }
  if (!call_ok) {
    ds->pool.Push(t->start);
    ds->pool.Push(t->end);
    return;
  }
  auto fill = [&d, t, group_id](Pending* p) {
    FillOpRecord(d, t->device, t->cpu_launch_ns, group_id, &p->rec.op);
    p->start = t->start;
    p->end = t->end;
    p->device = t->device;
    p->state = Pending::kTimed;
  };
  if (!EnqueueWith(fill)) {
    ds->pool.Push(t->start);
    ds->pool.Push(t->end);
    return;
  }
  CountTimed(d.kind);
}

bool TrackCompletion(const OpDesc& d, Timing* t, uint32_t group_id) {
  if (!OpDevice(d, &t->device)) return false;
  DeviceState* ds = DeviceFor(t->device);
  if (ds == nullptr) {
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  // No mark free (the poller, which grows and refills them, has not run for a while: a starved
  // host): a timing event marks it as well, at a timing record's price, rather than leaving a
  // collective untracked.
  cudaEvent_t mark = nullptr;
  BoundedQueue<cudaEvent_t>* from = &ds->marks;
  if (!from->Pop(&mark)) {
    from = &ds->pool;
    if (!from->Pop(&mark)) {
      CountUntimed(format::UntimedCause::kNoEvent);
      return false;
    }
  }
  if (Api().event_record(mark, d.stream) != cudaSuccess) {
    ClearOurError();
    from->Push(mark);
    CountUntimed(format::UntimedCause::kCudaError);
    return false;
  }
  const bool from_pool = from == &ds->pool;
  const bool queued = EnqueueWith([&d, t, mark, group_id, from_pool](Pending* p) {
    FillOpRecord(d, t->device, t->cpu_launch_ns, group_id, &p->rec.op);
    p->start = nullptr;
    p->end = mark;
    p->mark_from_pool = from_pool;
    p->device = t->device;
    p->state = Pending::kTracked;
  });
  if (!queued) from->Push(mark);
  return queued;
}

bool TrackByNccl(const OpDesc& d, Timing* t, uint32_t group_id, nccl_profiler::Launch* launch) {
  if (!OpDevice(d, &t->device)) return false;
  return EnqueueWith([&d, t, launch, group_id](Pending* p) {
    FillOpRecord(d, t->device, t->cpu_launch_ns, group_id, &p->rec.op);
    p->start = nullptr;
    p->end = nullptr;
    p->launch = launch;
    p->device = t->device;
    p->state = Pending::kProfiled;
  });
}

void QueueFollower(const OpDesc& d, int device, int64_t cpu_launch_ns, uint32_t group_id,
                   bool timed) {
  if (timed) CountTimed(d.kind);
  EnqueueWith([&d, device, cpu_launch_ns, group_id](Pending* p) {
    FillOpRecord(d, device, cpu_launch_ns, group_id, &p->rec.op);
    p->start = nullptr;
    p->end = nullptr;
    p->device = device;
    p->state = Pending::kFollower;
  });
}

namespace {

// The device a host sync waited for, with no CUDA error pending: the stream's when the runtime
// can tell (cudaStreamGetDevice, CUDA 12.8+), else the thread's current device, else the last
// one the thread used. Leaves the runtime's error state as it found it.
int SyncDevice(cudaStream_t stream) {
  const CudaApi& api = Api();
  int device = -1;
  auto stream_get_device = api.stream_get_device.get_optional();
  if (stream != nullptr && stream_get_device != nullptr) {
    if (stream_get_device(stream, &device) == cudaSuccess) return device;
    ClearOurError();
  }
  if (api.get_device(&device) == cudaSuccess) {
    t_device = device;
    return device;
  }
  ClearOurError();
  return t_device;
}

}  // namespace

void RecordHostSync(format::Operation op, cudaStream_t stream, int64_t begin_ns, int64_t end_ns) {
  OpDesc d;
  d.kind = format::OpKind::kHostSync;
  d.op = op;
  d.stream = stream;
  if (!CudartReady()) return;
  // With an error pending the hook makes no CUDA call: the thread's last known device (-1, which
  // the record format allows for host syncs, when the hook never saw one). A stream's sync goes
  // to the stream's device (one thread may drive several devices); other syncs to the current.
  int device = t_device;
  if (Api().peek_at_last_error() == cudaSuccess) device = SyncDevice(stream);
  Pending p;
  FillOpRecord(d, device, begin_ns, 0, &p.rec.op);
  p.rec.op.gpu_start_ns = begin_ns;
  p.rec.op.duration_ns = end_ns - begin_ns;
  p.start = nullptr;
  p.end = nullptr;
  p.device = device;
  p.state = Pending::kReady;
  Enqueue(p);
}

bool KernelTimed(const void* key, bool is_handle, uint32_t* name_id) {
  KernelTable& kt = g_state->kernels;
  if (!kt.filter_enabled() || key == nullptr) return false;
  const void* function = is_handle ? kt.FunctionOf(key) : key;
  if (function == nullptr) return false;  // a handle we did not see created: not timed
  bool known = false;
  bool timed = kt.Cached(function, &known, name_id);
  if (!known) {
    // Ask the runtime for the name, only when the application has no pending error (a failing
    // call of ours would replace it); else decide later.
    if (!CudartReady()) return false;
    const CudaApi& api = Api();
    if (api.peek_at_last_error() != cudaSuccess) return false;
    const char* mangled = nullptr;
    auto func_get_name = api.func_get_name.get_optional();
    if (func_get_name == nullptr || func_get_name(&mangled, function) != cudaSuccess) {
      ClearOurError();
      mangled = nullptr;
    }
    timed = kt.Classify(function, mangled, name_id);
  }
  if (is_handle) kt.Alias(key, function);
  return timed;
}

void ResolveComm(const void* comm, CommEntry* entry, int rank_hint, int size_hint) {
  if (entry->resolved.load(std::memory_order_acquire)) return;
  const CudaApi& api = Api();
  auto c = static_cast<ncclComm_t>(const_cast<void*>(comm));
  int rank = rank_hint, size = size_hint, device = -1;
  auto user_rank = api.nccl_comm_user_rank.get_optional();
  auto count = api.nccl_comm_count.get_optional();
  auto cu_device = api.nccl_comm_cu_device.get_optional();
  if (rank < 0 && (user_rank == nullptr || user_rank(c, &rank) != ncclSuccess)) return;
  if (size <= 0 && (count == nullptr || count(c, &size) != ncclSuccess)) return;
  if (cu_device == nullptr || cu_device(c, &device) != ncclSuccess) device = -1;
  if (!g_state->comms.Resolve(entry, rank, size, device)) return;
  Pending p;
  memset(&p.rec, 0, sizeof(p.rec));
  format::CommRecord& r = p.rec.comm;
  r.version = format::kRecordVersion;
  r.type = static_cast<uint8_t>(format::RecordType::kComm);
  r.rank = rank;
  r.size = size;
  r.device = device;
  r.comm_id = entry->id;
  r.parent_id = entry->parent_id;
  r.created_ns = RealtimeNs();
  r.global_rank = entry->origin == CommOrigin::kInit ? -2 : -1;  // poller fills it in
  p.start = nullptr;
  p.end = nullptr;
  p.device = device;
  p.state = Pending::kReady;
  Enqueue(p);
}

void ResolvePendingComms() {
  struct Item {
    const void* comm;
    CommEntry* entry;
  };
  Item items[64];
  int n = 0;
  g_state->comms.ForEachUnresolved([&](const void* comm, CommEntry* e) {
    if (n < 64) items[n++] = {comm, e};
  });
  for (int i = 0; i < n; ++i) ResolveComm(items[i].comm, items[i].entry, -1, -1);
}

bool Flush(int timeout_ms) {
  State* s = g_state;
  if (s == nullptr || s->poller == nullptr || g_mode.load() != kOn) return false;
  return s->poller->WaitFor(s->queued.load(), timeout_ms);
}

Stats GetStats() {
  Stats st = {};
  State* s = g_state;
  if (s == nullptr) return st;
  st.queued = s->queued.load();
  st.queue_dropped = s->queue_dropped.load();
  st.untimed = 0;
  for (const auto& n : s->untimed) st.untimed += n.load();
  if (s->poller != nullptr) {
    st.written = s->poller->written();
    st.ring_dropped = s->poller->ring_dropped();
  }
  return st;
}

}  // namespace hook
}  // namespace xtimer

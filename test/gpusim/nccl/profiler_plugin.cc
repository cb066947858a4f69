#include "test/gpusim/nccl/profiler_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace nccl {
namespace {

constexpr const char* kPrefix = "libnccl-profiler";

// NCCL 2.28.9 src/plugin/profiler.cc: profilerMutex, profilerPluginRefCount, profilerPluginLib,
// ncclProfiler and profilerPluginStatus. A failed load is final for the process; a successful one
// is counted per communicator and undone when the count drops to zero.
enum class LoadStatus { kReady, kLoaded, kFailed };
std::mutex g_load_mu;
int g_refcount = 0;
void* g_lib = nullptr;
std::atomic<const ncclProfiler_v5_t*> g_profiler{nullptr};
std::atomic<LoadStatus> g_status{LoadStatus::kReady};
std::atomic<int> g_event_mask{0};

// The logger handed to init(): NCCL passes ncclDebugLog; ours prints under XTIMER_SIM_VERBOSE.
void Logger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  Debug("nccl profiler plugin [level %d flags 0x%lx %s:%d]: %s", level, flags,
        file != nullptr ? file : "?", line, buf);
}

// NCCL 2.28.9 src/plugin/plugin_open.cc tryOpenLib: an empty name opens nothing; a name that is a
// case-insensitive prefix of "STATIC_PLUGIN" opens the program itself (dlopen(NULL)).
void* TryOpen(const std::string& name) {
  if (name.empty()) return nullptr;
  const char* path = name.c_str();
  if (strncasecmp(path, "STATIC_PLUGIN", name.size()) == 0) path = nullptr;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) Debug("nccl: PROFILER/Plugin: %s: %s", name.c_str(), dlerror());
  return handle;
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// NCCL 2.28.9 src/plugin/plugin_open.cc openPluginLib: the name as given (or
// libnccl-profiler.so when unset or empty); then, for a bare NAME (no '/', and not of the form
// lib*.so), libnccl-profiler-NAME.so.
void* OpenLib(const char* env) {
  std::string given = env != nullptr ? env : "";
  void* lib = TryOpen(given.empty() ? std::string(kPrefix) + ".so" : given);
  if (lib != nullptr || given.empty()) return lib;
  bool library_name = given.compare(0, 3, "lib") == 0 && EndsWith(given, ".so");
  if (given.find('/') != std::string::npos || library_name) return nullptr;
  return TryOpen(std::string(kPrefix) + "-" + given + ".so");
}

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerPluginLoad. gpusim offers v5 only: real NCCL
// then tries ncclProfiler_v4 ... _v1 (and, when no library opens, the net plugin's library).
void Load() {
  if (g_status.load() == LoadStatus::kFailed) return;
  std::lock_guard<std::mutex> lock(g_load_mu);
  if (g_status.load() == LoadStatus::kLoaded) {
    ++g_refcount;
    return;
  }
  const char* env = getenv("NCCL_PROFILER_PLUGIN");
  if (env != nullptr && strcasecmp(env, "none") == 0) {
    g_status = LoadStatus::kFailed;
    return;
  }
  g_lib = OpenLib(env);
  const ncclProfiler_v5_t* table =
      g_lib != nullptr ? static_cast<const ncclProfiler_v5_t*>(dlsym(g_lib, "ncclProfiler_v5"))
                       : nullptr;
  if (table == nullptr) {
    if (g_lib != nullptr) dlclose(g_lib);
    g_lib = nullptr;
    g_status = LoadStatus::kFailed;
    return;
  }
  Debug("nccl: PROFILER/Plugin: loaded %s (v5)", table->name != nullptr ? table->name : "?");
  g_profiler = table;
  ++g_refcount;
  g_status = LoadStatus::kLoaded;
}

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerPluginUnload.
void Unload() {
  std::lock_guard<std::mutex> lock(g_load_mu);
  if (--g_refcount != 0) return;
  if (g_lib != nullptr) dlclose(g_lib);
  g_lib = nullptr;
  g_profiler = nullptr;
  g_status = LoadStatus::kReady;
}

}  // namespace

const ncclProfiler_v5_t* Profiler() { return g_profiler.load(std::memory_order_acquire); }

int ProfilerEventMask() { return g_event_mask.load(std::memory_order_relaxed); }

std::shared_ptr<ProfilerComm> ProfilerComm::Init(uint64_t comm_hash, const char* comm_name,
                                                 int nnodes, int nranks, int rank) {
  Load();
  const ncclProfiler_v5_t* p = Profiler();
  // NCCL 2.28.9 ncclProfilerPluginInit calls ncclProfilerPluginLoad even when it fails; the
  // reference it takes on success is dropped by ncclProfilerPluginFinalize.
  if (p == nullptr) return nullptr;
  void* context = nullptr;
  // The plugin writes the process-wide mask (the init() argument is &ncclProfilerEventMask);
  // it starts from the current value and is published atomically for the other threads.
  int mask = g_event_mask.load(std::memory_order_relaxed);
  ncclResult_t r = p->init(&context, comm_hash, &mask, comm_name, nnodes, nranks, rank, Logger);
  g_event_mask.store(mask, std::memory_order_relaxed);
  if (r != ncclSuccess) {
    // NCCL 2.28.9 logs "Profiler init failed ... Continue without profiler." and goes on: the
    // plugin stays loaded and events keep flowing under the (process-wide) mask, with whatever
    // context init() left (ext-profiler/README.md says NCCL disables the plugin; the code does
    // not).
    Debug("nccl: profiler init failed with error %d; continuing", static_cast<int>(r));
  }
  return std::shared_ptr<ProfilerComm>(new ProfilerComm(context, rank));
}

ProfilerComm::~ProfilerComm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (proxy_.joinable()) proxy_.join();
}

uint64_t ProfilerComm::NextSeq(OpKind func) {
  return seq_[static_cast<int>(func)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t ProfilerComm::PeekSeq(OpKind func) const {
  return seq_[static_cast<int>(func)].load(std::memory_order_relaxed);
}

// NCCL 2.28.9 src/init.cc commFree -> ncclProfilerPluginFinalize: after the proxy has stopped
// (commDestroySync -> ncclProxyStop); finalize() only when init() left a context.
void ProfilerComm::Finalize() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finalized_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (proxy_.joinable()) proxy_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    finalized_ = true;
    queue_.clear();
  }
  const ncclProfiler_v5_t* p = Profiler();
  if (p != nullptr && context_ != nullptr) p->finalize(context_);
  Unload();
}

// The proxy is woken only when it waits for what changed (a wake-up costs the application's
// cores, where NCCL's proxy thread has its own).
void ProfilerComm::Arm(const std::shared_ptr<ProfPlan>& plan) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan->armed = true;
    wake = waiting_ == Waiting::kArm;
  }
  if (wake) cv_.notify_all();
}

void ProfilerComm::KernelStarted(const std::shared_ptr<ProfPlan>& plan, int64_t start_ns) {
  Post(Work{plan, true, false, start_ns});
}

void ProfilerComm::KernelEnded(const std::shared_ptr<ProfPlan>& plan, int64_t end_ns,
                               bool completed) {
  Post(Work{plan, false, completed, end_ns});
}

void ProfilerComm::Post(Work work) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (!proxy_.joinable()) proxy_ = std::thread([this] { ProxyMain(); });
    queue_.push_back(std::move(work));
    wake = waiting_ == Waiting::kWork;
  }
  if (wake) cv_.notify_all();
}

// NCCL 2.28.9 src/transport/profiler.cc profilerProxyProgress: the proxy thread polls the
// counters the kernel writes per channel; a channel's event starts once the kernel has started
// on it and stops once it has finished it. Here: a report is due when the GPU clock (NowNs) has
// reached its time and the plan is armed. On stop, what is queued is still reported.
void ProfilerComm::ProxyMain() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      waiting_ = Waiting::kWork;
      cv_.wait(lock);
      waiting_ = Waiting::kNone;
      continue;
    }
    const Work& next = queue_.front();
    if (!next.plan->armed) {
      waiting_ = Waiting::kArm;
      cv_.wait(lock);
      waiting_ = Waiting::kNone;
      continue;
    }
    int64_t now = NowNs();
    if (now < next.at_ns) {
      waiting_ = Waiting::kTime;
      cv_.wait_for(lock, std::chrono::nanoseconds(next.at_ns - now));
      waiting_ = Waiting::kNone;
      continue;
    }
    Work work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Report(work);
    lock.lock();
  }
}

// NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerStartKernelChEvent /
// ncclProfilerStopKernelChEvent: a channel starts only when its task's mask has ncclProfileKernelCh
// (parent: the task's Coll or P2p handle, rank left 0 as NCCL leaves it); its stop records
// ncclProfilerKernelChStop with the end timer, then stops the event, and only for a non-null
// handle.
void ProfilerComm::Report(const Work& work) {
  const ncclProfiler_v5_t* p = Profiler();
  if (p == nullptr) return;
  ProfPlan& plan = *work.plan;
  if (work.start) {
    plan.channels.clear();  // a captured plan without replayed task events runs again
    for (const ProfTask& t : plan.tasks) {
      for (uint8_t ch = 0; t.proxied && ch < t.n_channels; ++ch) {
        void* handle = nullptr;
        if ((t.mask & ncclProfileKernelCh) != 0) {
          ncclProfilerEventDescr_v5_t d{};
          d.type = ncclProfileKernelCh;
          d.parentObj = t.event;
          d.kernelCh.channelId = ch;
          d.kernelCh.pTimer = static_cast<uint64_t>(work.at_ns);
          p->startEvent(context_, &handle, &d);
        }
        plan.channels.push_back(handle);
      }
    }
    return;
  }
  if (!work.completed) return;
  for (void* handle : plan.channels) {
    if (handle == nullptr) continue;
    ncclProfilerEventStateArgs_v5_t a{};
    a.kernelCh.pTimer = static_cast<uint64_t>(work.at_ns);
    p->recordEventState(handle, ncclProfilerKernelChStop, &a);
    p->stopEvent(handle);
  }
}

}  // namespace nccl
}  // namespace xtsim

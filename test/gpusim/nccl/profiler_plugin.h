// NCCL's profiler plugin as the simulated NCCL loads and drives it, following NCCL 2.28.9 (the
// source cited at each function; see docs/gpusim-nccl.md, "Profiler plugin"): the library named
// by NCCL_PROFILER_PLUGIN is opened at the first communicator's initialisation, its
// `ncclProfiler_v5` table is looked up, init() is called per communicator and finalize() when the
// communicator is destroyed; the library is closed when the last communicator that loaded it is.
//
// The kernel-channel events come from a proxy thread per communicator (ProfilerComm below), as
// NCCL's proxy progress thread reports them: a channel's start when the simulated kernel starts,
// its stop once the operation has completed on the stream.
//
// None of this charges simulated CUDA call costs (call_cost.h): NCCL's own bookkeeping is free.
#ifndef XTIMER_TEST_GPUSIM_NCCL_PROFILER_PLUGIN_H_
#define XTIMER_TEST_GPUSIM_NCCL_PROFILER_PLUGIN_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/gpusim/nccl/op_kind.h"
#include "third_party/nccl_profiler/nccl_profiler_v5.h"

namespace xtsim {
namespace nccl {

// The loaded plugin's table, or nullptr (none configured, none found, or no v5 symbol).
const ncclProfiler_v5_t* Profiler();

// The process's activation mask: one int for every communicator, written back by each init()
// (NCCL 2.28.9 src/plugin/profiler.cc: the global ncclProfilerEventMask).
int ProfilerEventMask();

// One NCCL task (ncclTaskColl or ncclTaskP2p) as the profiler sees it.
struct ProfTask {
  bool p2p = false;
  OpKind func = OpKind::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;  // for p2p tasks: the buffer sent or received
  size_t count = 0;
  const char* datatype = "";
  int root = 0;               // the root of a collective, the peer of a p2p task
  int mask = 0;               // the activation mask when the call was made
  void* group_api = nullptr;  // handles of the API events that were open at the call
  void* api = nullptr;        // its CollApi / P2pApi event
  void* event = nullptr;      // its Coll / P2p event (the kernel channels' parent)
  uint8_t n_channels = 0;
  bool proxied = true;  // false: no proxy work, so no kernel channel (a send/recv with oneself)
};

class ProfilerComm;

// The profiled part of one launch of one communicator (NCCL's kernel plan).
struct ProfPlan {
  ProfilerComm* comm = nullptr;  // owned by the communicator, which the launch's operations hold
  std::vector<ProfTask> tasks;
  void* group_event = nullptr;
  void* kernel_launch_event = nullptr;
  std::vector<void*> channels;  // kernel-channel handles, task-major
  bool armed = false;           // the proxy may report it (its task events exist); proxy mutex
};

// The plugin state of one communicator, and its proxy thread.
class ProfilerComm {
 public:
  // NCCL 2.28.9 src/plugin/profiler.cc ncclProfilerPluginInit: loads the plugin on first use and
  // calls init(). nullptr when no plugin is loaded.
  static std::shared_ptr<ProfilerComm> Init(uint64_t comm_hash, const char* comm_name, int nnodes,
                                            int nranks, int rank);
  ~ProfilerComm();
  ProfilerComm(const ProfilerComm&) = delete;
  ProfilerComm& operator=(const ProfilerComm&) = delete;

  // ncclCommDestroy / ncclCommAbort: reports what the kernel already did, stops the proxy, calls
  // finalize() and drops this communicator's reference to the library. Later reports are dropped.
  void Finalize();

  void* context() const { return context_; }
  int rank() const { return rank_; }
  // comm->seqNumber[func]: the value for this task, then advanced (NCCL 2.28.9 src/plugin/
  // profiler.cc ncclProfilerStartTaskEvents).
  uint64_t NextSeq(OpKind func);
  uint64_t PeekSeq(OpKind func) const;

  // Called by the launching thread once the plan's task events have started: the proxy may now
  // report its kernel channels.
  void Arm(const std::shared_ptr<ProfPlan>& plan);
  // Called by the stream's task: the kernel started (at GPU time start_ns) / ended (end_ns,
  // completed: the results are in place). `completed` false: it gave up (abort); no stop follows.
  void KernelStarted(const std::shared_ptr<ProfPlan>& plan, int64_t start_ns);
  void KernelEnded(const std::shared_ptr<ProfPlan>& plan, int64_t end_ns, bool completed);

 private:
  struct Work {
    std::shared_ptr<ProfPlan> plan;
    bool start;
    bool completed;
    int64_t at_ns;
  };
  ProfilerComm(void* context, int rank) : context_(context), rank_(rank) {}
  void Post(Work work);
  void ProxyMain();
  void Report(const Work& work);

  void* const context_;
  const int rank_;
  std::atomic<uint64_t> seq_[kOpKinds] = {};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;
  enum class Waiting { kNone, kWork, kArm, kTime };  // what the proxy thread waits for
  Waiting waiting_ = Waiting::kNone;
  bool stopping_ = false;
  bool finalized_ = false;
  std::thread proxy_;
};

}  // namespace nccl
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_NCCL_PROFILER_PLUGIN_H_

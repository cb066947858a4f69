// The simulated GPU: devices, streams, events and graphs, with the time model of sim_api.h.
//
// Each stream keeps a FIFO of operations. An operation that cannot block (a modelled busy period,
// a copy, a memset, an event record, a wait on an event that has already completed) runs at once
// on the calling thread when the stream has nothing queued: that is the common case and costs
// one uncontended lock. Anything else (tasks from NCCL, host callbacks, waits on events still
// queued elsewhere) goes to the FIFO and is executed, in order, by the stream's executor thread,
// started the first time the stream needs one.
//
// Like a real launch queue, a stream holds a bounded number of pending operations (queued, or
// executed whose simulated end is still ahead of the wall clock): XTIMER_SIM_STREAM_QUEUE_DEPTH,
// 1024 by default. Submitting to a full stream blocks the host until the oldest one finishes.
// Internal dependency markers and the operations of one graph launch are admitted together
// (a graph launch is one entry of a real launch queue), so nothing waits on itself.
#ifndef XTIMER_TEST_GPUSIM_CUDART_ENGINE_H_
#define XTIMER_TEST_GPUSIM_CUDART_ENGINE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "test/gpusim/sim_api.h"

namespace xtsim {

struct Graph;
class Stream;

// Owns a task's context; releases it when the last operation or graph that can run it is gone.
struct TaskHolder {
  XtsimTaskRun run = nullptr;
  XtsimTaskRelease release = nullptr;
  void* ctx = nullptr;
  ~TaskHolder() {
    if (release != nullptr) release(ctx);
  }
};

// Completion state of an event, shared by the event handle and the operations that record it.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  unsigned flags = 0;
  int device = 0;
  uint64_t recorded = 0;   // records issued (host side)
  uint64_t completed = 0;  // records executed in stream order
  int64_t time_ns = 0;     // simulated time of the latest executed record
  // Set when the latest record was captured: a stream that waits on it joins that capture.
  std::weak_ptr<Graph> capture;
  unsigned long long capture_id = 0;
  bool Recorded() {
    std::lock_guard<std::mutex> lock(mu);
    return recorded > 0;
  }
};

enum class OpKind { kBusy, kCopy, kMemset, kRecord, kWait, kTask, kHostFn, kFree };

struct Op {
  OpKind kind = OpKind::kBusy;
  int64_t enqueue_ns = 0;    // host time of the submission (graph launch time for replays)
  int64_t not_before_ns = 0;  // implicit legacy-stream dependency
  int64_t duration_ns = 0;   // kBusy, kCopy, kMemset
  void* dst = nullptr;       // kCopy, kMemset, kFree
  const void* src = nullptr;  // kCopy
  size_t bytes = 0;          // kCopy, kMemset
  int value = 0;             // kMemset
  std::shared_ptr<EventState> event;  // kRecord, kWait
  uint64_t event_seq = 0;             // kRecord: this record's number; kWait: the one to wait for
  std::shared_ptr<TaskHolder> task;   // kTask
  cudaHostFn_t host_fn = nullptr;     // kHostFn
  void* host_arg = nullptr;
};

// A captured graph: its operations, in capture order (a linearisation of the captured DAG:
// work captured on streams that joined through events is replayed in the order it was captured).
struct Graph {
  std::vector<Op> ops;
  bool capturing = false;
  Stream* origin = nullptr;       // the stream that began the capture
  std::vector<Stream*> joined;    // streams that joined it through cudaStreamWaitEvent
};
struct GraphExec {
  std::vector<Op> ops;
  int device = 0;
};

class Stream {
 public:
  Stream(int device, unsigned flags, int priority, bool legacy);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  bool legacy() const { return legacy_; }
  unsigned long long id() const { return id_; }
  // Synchronises with the legacy default stream.
  bool blocking() const { return legacy_ || (flags_ & cudaStreamNonBlocking) == 0; }

  // Appends an operation (or records it into the capture graph), first waiting for room when
  // `wait_for_room`. Returns the capture error, if any.
  cudaError_t Submit(Op op, bool wait_for_room = true);
  // Blocks until the stream holds fewer pending operations than its depth (graph launches call
  // it once, then submit their operations without waiting).
  void WaitForRoom();
  // Blocks until everything submitted so far has executed and the wall clock has reached its end.
  void Synchronize();
  // cudaSuccess when idle and done, else cudaErrorNotReady.
  cudaError_t Query();
  // Simulated time at which the work submitted so far ends; waits for queued work to execute.
  int64_t DrainedTail();

  // Stream capture.
  cudaError_t BeginCapture(cudaStreamCaptureMode mode);
  cudaError_t EndCapture(cudaGraph_t* graph);
  // Joins the capture of `graph` (cross-stream capture through an event).
  void JoinCapture(std::shared_ptr<Graph> graph, unsigned long long capture_id);
  cudaStreamCaptureStatus CaptureStatus(unsigned long long* id);
  // The graph being captured into (nullptr when not capturing).
  std::shared_ptr<Graph> CaptureGraph(unsigned long long* id);
  // Marks an active capture invalid (a forbidden call was made on the stream).
  void InvalidateCapture();
  bool Capturing();

  // Called when the user destroys the stream: the executor finishes queued work, then the stream
  // deletes itself. Never blocks.
  void Retire();

 private:
  void ExecuteLocked(Op& op, std::unique_lock<std::mutex>& lock);
  bool CanRunInline(const Op& op) const;
  // Appends to the FIFO under the lock; starts the executor when needed.
  void EnqueueLocked(Op op);
  // Records that an executed operation ends at tail_ns_ (pending until the wall clock gets there).
  void NoteEndLocked();
  // Returns whether it had to wait.
  bool WaitForRoomLocked(std::unique_lock<std::mutex>& lock);
  friend class Engine;
  void Worker();

  const int device_;
  const unsigned flags_;
  const int priority_;
  const bool legacy_;
  const unsigned long long id_;

  std::mutex mu_;
  std::condition_variable cv_;  // queue became non-empty, or an operation finished
  std::deque<Op> queue_;
  std::deque<int64_t> ends_;  // simulated ends of executed operations, oldest first
  const size_t depth_;        // XTIMER_SIM_STREAM_QUEUE_DEPTH
  bool busy_ = false;       // the executor holds an operation outside the lock
  bool retired_ = false;
  bool worker_started_ = false;
  int64_t tail_ns_ = 0;
  std::thread worker_;

  std::shared_ptr<Graph> capture_;  // non-null while capturing
  unsigned long long capture_id_ = 0;
  cudaStreamCaptureMode capture_mode_ = cudaStreamCaptureModeGlobal;
  bool capture_invalid_ = false;
  std::thread::id capture_thread_;
};

// Per-device state.
struct Device {
  std::mutex mu;
  std::vector<Stream*> streams;  // user streams and per-thread default streams
  Stream* legacy = nullptr;
  size_t allocated = 0;
};

class Engine {
 public:
  // Created by the first call that needs a device: that is when CUDA is initialized.
  static Engine& Get();

  // True in a child forked after the engine existed. As with the real runtime, such a child
  // cannot use CUDA (its executor threads did not survive the fork and its locks may be held):
  // the runtime's common prologue (CheckInit) fails with cudaErrorInitializationError.
  static bool InForkedChild();

  int device_count() const { return static_cast<int>(devices_.size()); }
  Device& device(int i) { return *devices_[static_cast<size_t>(i)]; }

  // Resolves a user handle (0 means legacy unless per_thread, cudaStreamLegacy, cudaStreamPerThread)
  // for the calling thread's current device. Returns nullptr for an invalid handle.
  Stream* Resolve(cudaStream_t handle, bool per_thread);
  Stream* CreateStream(int device, unsigned flags, int priority);
  bool DestroyStream(Stream* stream);

  // The implicit synchronisation of the legacy default stream: work on the legacy stream waits
  // for all blocking streams of its device, and work on a blocking stream waits for the legacy
  // stream. Raises *floor_ns to the tails of those streams; for a stream with queued work it
  // records an internal event there and appends a wait for it to *waits instead.
  void LegacyDependencies(Stream* stream, int64_t* floor_ns, std::vector<Op>* waits);

  void SynchronizeDevice(int device);

  std::shared_ptr<EventState> NewEvent(unsigned flags, int device);
  std::shared_ptr<EventState> FindEvent(cudaEvent_t handle);
  bool DestroyEvent(cudaEvent_t handle);

 private:
  Engine();
  std::vector<std::unique_ptr<Device>> devices_;
  std::mutex registry_mu_;
  std::vector<Stream*> live_streams_;  // sorted, for handle validation
  std::unordered_map<void*, std::shared_ptr<EventState>> events_;
};

// XTIMER_SIM_STREAM_QUEUE_DEPTH: pending operations a stream holds before launches block.
size_t StreamQueueDepth();

// Sleeps until CLOCK_MONOTONIC reaches t_ns.
void SleepUntil(int64_t t_ns);

// The calling thread's current device.
int CurrentDevice();
void SetCurrentDevice(int device);

}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUDART_ENGINE_H_

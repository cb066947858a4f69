#include "test/gpusim/cudart/engine.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/capture_rules.h"
#include "test/gpusim/cudart/memory.h"

namespace xtsim {
namespace {

std::atomic<unsigned long long> g_next_stream_id{1};
std::atomic<unsigned long long> g_next_capture_id{1};
thread_local int t_device = 0;
std::atomic<bool> g_in_forked_child{false};

void MarkForkedChild() { g_in_forked_child.store(true, std::memory_order_relaxed); }

}  // namespace

void SleepUntil(int64_t t_ns) {
  timespec ts;
  ts.tv_sec = t_ns / 1000000000;
  ts.tv_nsec = t_ns % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

size_t StreamQueueDepth() {
  static const size_t depth = [] {
    const int64_t v = EnvInt("XTIMER_SIM_STREAM_QUEUE_DEPTH", 1024);
    if (v < 1 || v > (int64_t{1} << 20)) {
      Fatal("XTIMER_SIM_STREAM_QUEUE_DEPTH=%lld is out of range [1, 1048576]",
            static_cast<long long>(v));
    }
    return static_cast<size_t>(v);
  }();
  return depth;
}

int CurrentDevice() { return t_device; }
void SetCurrentDevice(int device) { t_device = device; }

// ---------------------------------------------------------------------------------------------
// Stream

Stream::Stream(int device, unsigned flags, int priority, bool legacy)
    : device_(device),
      flags_(flags),
      priority_(priority),
      legacy_(legacy),
      id_(g_next_stream_id.fetch_add(1)),
      depth_(StreamQueueDepth()) {}

Stream::~Stream() = default;

bool Stream::CanRunInline(const Op& op) const {
  if (!queue_.empty() || busy_) return false;
  switch (op.kind) {
    case OpKind::kBusy:
    case OpKind::kCopy:
    case OpKind::kMemset:
    case OpKind::kRecord:
    case OpKind::kFree:
      return true;
    case OpKind::kWait: {
      std::lock_guard<std::mutex> lock(op.event->mu);
      return op.event->completed >= op.event_seq;
    }
    case OpKind::kTask:
    case OpKind::kHostFn:
      return false;
  }
  return false;
}

void Stream::ExecuteLocked(Op& op, std::unique_lock<std::mutex>& lock) {
  const int64_t start = std::max({tail_ns_, op.enqueue_ns, op.not_before_ns});
  switch (op.kind) {
    case OpKind::kBusy:
      tail_ns_ = start + op.duration_ns;
      break;
    case OpKind::kCopy:
      if (op.bytes > 0 && op.dst != op.src) memmove(op.dst, op.src, op.bytes);
      tail_ns_ = start + op.duration_ns;
      break;
    case OpKind::kMemset:
      if (op.bytes > 0) memset(op.dst, op.value, op.bytes);
      tail_ns_ = start + op.duration_ns;
      break;
    case OpKind::kFree:
      FreeDeviceMemory(op.dst);
      tail_ns_ = start;
      break;
    case OpKind::kRecord: {
      tail_ns_ = start;
      std::lock_guard<std::mutex> ev_lock(op.event->mu);
      if (op.event_seq > op.event->completed) {
        op.event->completed = op.event_seq;
        op.event->time_ns = start;
      }
      op.event->cv.notify_all();
      break;
    }
    case OpKind::kWait: {
      int64_t ready;
      {
        std::unique_lock<std::mutex> ev_lock(op.event->mu);
        if (op.event->completed < op.event_seq) {
          lock.unlock();
          op.event->cv.wait(ev_lock, [&] { return op.event->completed >= op.event_seq; });
          ready = op.event->time_ns;
          ev_lock.unlock();
          lock.lock();
        } else {
          ready = op.event->time_ns;
        }
      }
      tail_ns_ = std::max(std::max(tail_ns_, start), ready);
      break;
    }
    case OpKind::kTask: {
      lock.unlock();
      int64_t end = op.task->run(op.task->ctx, start);
      op.task.reset();  // may release the context: outside the stream lock
      lock.lock();
      tail_ns_ = std::max(std::max(tail_ns_, start), end);
      break;
    }
    case OpKind::kHostFn: {
      lock.unlock();
      SleepUntil(start);  // a host callback runs once the work before it has finished
      op.host_fn(op.host_arg);
      int64_t end = NowNs();
      lock.lock();
      tail_ns_ = std::max(tail_ns_, end);
      break;
    }
  }
}

void Stream::NoteEndLocked() { ends_.push_back(tail_ns_); }

bool Stream::WaitForRoomLocked(std::unique_lock<std::mutex>& lock) {
  for (bool waited = false;; waited = true) {
    const int64_t now = NowNs();
    while (!ends_.empty() && ends_.front() <= now) ends_.pop_front();
    if (queue_.size() + (busy_ ? 1 : 0) + ends_.size() < depth_) return waited;
    // Woken when the executor finishes an operation, or when the oldest executed one ends.
    const int64_t wake = ends_.empty() ? now + 100000000 : ends_.front();
    cv_.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(wake - now, 1000)));
  }
}

void Stream::WaitForRoom() {
  std::unique_lock<std::mutex> lock(mu_);
  if (capture_ == nullptr) WaitForRoomLocked(lock);
}

void Stream::EnqueueLocked(Op op) {
  if (CanRunInline(op)) {
    // No lock juggling happens for inline kinds; a dummy lock satisfies the signature.
    std::unique_lock<std::mutex> unused;
    ExecuteLocked(op, unused);
    NoteEndLocked();
    return;
  }
  queue_.push_back(std::move(op));
  if (!worker_started_) {
    worker_started_ = true;
    worker_ = std::thread([this] { Worker(); });
  }
  cv_.notify_all();
}

void Stream::Worker() {
  // The executor must not take the application's signals (heaptrack's rule for helper threads).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  TakeDevicePriority();  // it is the device
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return !queue_.empty() || retired_; });
    if (queue_.empty()) break;  // retired and drained
    Op op = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    ExecuteLocked(op, lock);
    busy_ = false;
    NoteEndLocked();
    cv_.notify_all();
  }
  lock.unlock();
  delete this;
}

cudaError_t Stream::Submit(Op op, bool wait_for_room) {
  const bool stamp = op.enqueue_ns == 0;
  if (stamp) op.enqueue_ns = NowNs();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (capture_ != nullptr) {
      if (capture_invalid_) return cudaErrorStreamCaptureInvalidated;
      capture_->ops.push_back(std::move(op));
      return cudaSuccess;
    }
    // A launch that blocked for room is submitted when it returns.
    if (wait_for_room && WaitForRoomLocked(lock) && stamp) op.enqueue_ns = NowNs();
  }
  std::vector<Op> waits;
  int64_t floor_ns = 0;
  if (blocking()) Engine::Get().LegacyDependencies(this, &floor_ns, &waits);
  std::unique_lock<std::mutex> lock(mu_);
  for (Op& w : waits) {
    w.enqueue_ns = op.enqueue_ns;
    EnqueueLocked(std::move(w));
  }
  op.not_before_ns = floor_ns;
  EnqueueLocked(std::move(op));
  return cudaSuccess;
}

int64_t Stream::DrainedTail() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return tail_ns_;
}

void Stream::Synchronize() { SleepUntil(DrainedTail()); }

cudaError_t Stream::Query() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty() || busy_ || NowNs() < tail_ns_) return cudaErrorNotReady;
  return cudaSuccess;
}

cudaError_t Stream::BeginCapture(cudaStreamCaptureMode mode) {
  if (legacy_) return cudaErrorStreamCaptureUnsupported;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (capture_ != nullptr) return cudaErrorIllegalState;
    capture_ = std::make_shared<Graph>();
    capture_->capturing = true;
    capture_->origin = this;
    capture_id_ = g_next_capture_id.fetch_add(1);
    capture_mode_ = mode;
    capture_invalid_ = false;
    capture_thread_ = std::this_thread::get_id();
  }
  NoteCaptureBegun(this, mode);  // capture_rules.h: outside mu_
  return cudaSuccess;
}

void Stream::JoinCapture(std::shared_ptr<Graph> graph, unsigned long long capture_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_ != nullptr) return;
  graph->joined.push_back(this);
  capture_ = std::move(graph);
  capture_id_ = capture_id;
  capture_invalid_ = false;
}

cudaError_t Stream::EndCapture(cudaGraph_t* out) {
  std::shared_ptr<Graph> graph;
  bool invalid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (capture_ == nullptr || capture_->origin != this) return cudaErrorIllegalState;
    if (capture_mode_ != cudaStreamCaptureModeRelaxed &&
        capture_thread_ != std::this_thread::get_id()) {
      return cudaErrorStreamCaptureWrongThread;
    }
    graph = std::move(capture_);
    capture_ = nullptr;
  }
  NoteCaptureEnded(this);  // capture_rules.h: outside mu_; no unsafe call invalidates it now
  {
    std::lock_guard<std::mutex> lock(mu_);
    invalid = capture_invalid_;
    capture_invalid_ = false;
  }
  graph->capturing = false;
  for (Stream* s : graph->joined) {
    std::lock_guard<std::mutex> lock(s->mu_);
    if (s->capture_ == graph) s->capture_ = nullptr;
  }
  graph->joined.clear();
  if (invalid) {
    *out = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  *out = reinterpret_cast<cudaGraph_t>(new std::shared_ptr<Graph>(std::move(graph)));
  return cudaSuccess;
}

cudaStreamCaptureStatus Stream::CaptureStatus(unsigned long long* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_ == nullptr) return cudaStreamCaptureStatusNone;
  if (id != nullptr) *id = capture_id_;
  return capture_invalid_ ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
}

std::shared_ptr<Graph> Stream::CaptureGraph(unsigned long long* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id != nullptr) *id = capture_id_;
  return capture_;
}

void Stream::InvalidateCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_ != nullptr) capture_invalid_ = true;
}

bool Stream::Capturing() {
  std::lock_guard<std::mutex> lock(mu_);
  return capture_ != nullptr;
}

void Stream::Retire() {
  NoteCaptureEnded(this);  // a stream destroyed while capturing ends its capture sequence
  std::unique_lock<std::mutex> lock(mu_);
  if (!worker_started_) {
    lock.unlock();
    delete this;
    return;
  }
  retired_ = true;
  worker_.detach();
  cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Engine

Engine& Engine::Get() {
  static Engine* engine = new Engine();  // never destroyed: executors may outlive main()
  return *engine;
}

bool Engine::InForkedChild() { return g_in_forked_child.load(std::memory_order_relaxed); }

Engine::Engine() {
  pthread_atfork(nullptr, nullptr, &MarkForkedChild);
  int64_t count = EnvInt("XTIMER_SIM_DEVICE_COUNT", 8);
  if (count < 0 || count > 64) Fatal("XTIMER_SIM_DEVICE_COUNT=%lld is out of range [0, 64]",
                                     static_cast<long long>(count));
  for (int64_t i = 0; i < count; ++i) {
    auto d = std::make_unique<Device>();
    d->legacy = new Stream(static_cast<int>(i), 0, 0, /*legacy=*/true);
    devices_.push_back(std::move(d));
  }
}

Stream* Engine::Resolve(cudaStream_t handle, bool per_thread) {
  if (handle == nullptr) handle = per_thread ? cudaStreamPerThread : cudaStreamLegacy;
  if (handle == cudaStreamLegacy || handle == cudaStreamPerThread) {
    int dev = CurrentDevice();
    if (dev < 0 || dev >= device_count()) return nullptr;
    if (handle == cudaStreamLegacy) return devices_[static_cast<size_t>(dev)]->legacy;
    thread_local std::vector<Stream*> per_thread_streams;
    if (per_thread_streams.empty()) per_thread_streams.resize(devices_.size(), nullptr);
    Stream*& s = per_thread_streams[static_cast<size_t>(dev)];
    if (s == nullptr) s = CreateStream(dev, cudaStreamDefault, 0);  // lives as long as the process
    return s;
  }
  Stream* s = reinterpret_cast<Stream*>(handle);
  std::lock_guard<std::mutex> lock(registry_mu_);
  return std::binary_search(live_streams_.begin(), live_streams_.end(), s) ? s : nullptr;
}

Stream* Engine::CreateStream(int device, unsigned flags, int priority) {
  Stream* s = new Stream(device, flags, priority, /*legacy=*/false);
  {
    std::lock_guard<std::mutex> lock(devices_[static_cast<size_t>(device)]->mu);
    devices_[static_cast<size_t>(device)]->streams.push_back(s);
  }
  std::lock_guard<std::mutex> lock(registry_mu_);
  live_streams_.insert(std::upper_bound(live_streams_.begin(), live_streams_.end(), s), s);
  return s;
}

bool Engine::DestroyStream(Stream* s) {
  {
    std::lock_guard<std::mutex> lock(registry_mu_);
    auto it = std::lower_bound(live_streams_.begin(), live_streams_.end(), s);
    if (it == live_streams_.end() || *it != s) return false;
    live_streams_.erase(it);
  }
  {
    Device& d = *devices_[static_cast<size_t>(s->device())];
    std::lock_guard<std::mutex> lock(d.mu);
    d.streams.erase(std::remove(d.streams.begin(), d.streams.end(), s), d.streams.end());
  }
  s->Retire();
  return true;
}

void Engine::LegacyDependencies(Stream* stream, int64_t* floor_ns, std::vector<Op>* waits) {
  Device& d = *devices_[static_cast<size_t>(stream->device())];
  std::lock_guard<std::mutex> device_lock(d.mu);
  auto depend_on = [&](Stream* other) {
    std::unique_lock<std::mutex> lock(other->mu_);
    if (other->capture_ != nullptr) return;
    if (other->queue_.empty() && !other->busy_) {
      *floor_ns = std::max(*floor_ns, other->tail_ns_);
      return;
    }
    auto marker = std::make_shared<EventState>();
    marker->recorded = 1;
    Op record;
    record.kind = OpKind::kRecord;
    record.enqueue_ns = NowNs();
    record.event = marker;
    record.event_seq = 1;
    other->EnqueueLocked(std::move(record));
    Op wait;
    wait.kind = OpKind::kWait;
    wait.event = std::move(marker);
    wait.event_seq = 1;
    waits->push_back(std::move(wait));
  };
  if (stream->legacy()) {
    for (Stream* s : d.streams) {
      if (s != stream && s->blocking()) depend_on(s);
    }
  } else if (d.legacy != stream) {
    depend_on(d.legacy);
  }
}

void Engine::SynchronizeDevice(int device) {
  Device& d = *devices_[static_cast<size_t>(device)];
  int64_t tail;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    tail = d.legacy->DrainedTail();
    for (Stream* s : d.streams) tail = std::max(tail, s->DrainedTail());
  }
  SleepUntil(tail);
}

std::shared_ptr<EventState> Engine::NewEvent(unsigned flags, int device) {
  auto ev = std::make_shared<EventState>();
  ev->flags = flags;
  ev->device = device;
  std::lock_guard<std::mutex> lock(registry_mu_);
  events_.emplace(ev.get(), ev);
  return ev;
}

std::shared_ptr<EventState> Engine::FindEvent(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  auto it = events_.find(reinterpret_cast<void*>(handle));
  return it == events_.end() ? nullptr : it->second;
}

bool Engine::DestroyEvent(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  return events_.erase(reinterpret_cast<void*>(handle)) > 0;
}

}  // namespace xtsim

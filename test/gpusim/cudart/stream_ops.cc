#include "test/gpusim/cudart/stream_ops.h"

#include <cstring>
#include <mutex>
#include <utility>

#include "test/gpusim/common/call_cost.h"
#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/cudart/memory.h"
#include "test/gpusim/cudart/model.h"

namespace xtsim {
namespace {

// A fill with a pattern wider than one byte runs as a task (the engine's memset sets bytes).
struct FillTask {
  void* dst;
  uint32_t value;
  size_t element_size;
  size_t count;
  int64_t duration_ns;
};

int64_t RunFill(void* ctx, int64_t start_ns) {
  const auto* f = static_cast<const FillTask*>(ctx);
  auto* p = static_cast<unsigned char*>(f->dst);
  for (size_t i = 0; i < f->count; ++i) memcpy(p + i * f->element_size, &f->value, f->element_size);
  return start_ns + f->duration_ns;
}

void ReleaseFill(void* ctx) { delete static_cast<FillTask*>(ctx); }

bool UniformBytes(uint32_t value, size_t element_size) {
  for (size_t i = 1; i < element_size; ++i) {
    if (((value >> (8 * i)) & 0xff) != (value & 0xff)) return false;
  }
  return true;
}

}  // namespace

cudaError_t RecordEvent(Stream* s, const std::shared_ptr<EventState>& ev) {
  ChargeCall((ev->flags & cudaEventDisableTiming) != 0 ? CallCost::kEventRecordUntimed
                                                        : CallCost::kEventRecordTimed);
  Op op;
  op.kind = OpKind::kRecord;
  op.event = ev;
  unsigned long long capture_id = 0;
  std::shared_ptr<Graph> graph = s->CaptureGraph(&capture_id);
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    if (graph != nullptr) {
      ev->capture = graph;
      ev->capture_id = capture_id;
    } else {
      ev->capture.reset();
      op.event_seq = ++ev->recorded;
    }
  }
  return s->Submit(std::move(op));
}

cudaError_t WaitEvent(Stream* s, const std::shared_ptr<EventState>& ev) {
  Op op;
  op.kind = OpKind::kWait;
  op.event = ev;
  std::shared_ptr<Graph> join;
  unsigned long long join_id = 0;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    if (ev->recorded == 0 && ev->capture.expired()) return cudaSuccess;  // never recorded: no-op
    join = ev->capture.lock();
    join_id = ev->capture_id;
    op.event_seq = ev->recorded;
  }
  if (join != nullptr && join->capturing) {
    s->JoinCapture(std::move(join), join_id);
    return cudaSuccess;
  }
  return s->Submit(std::move(op));
}

cudaError_t QueryEvent(EventState& ev) {
  ChargeCall(CallCost::kEventQuery);
  std::lock_guard<std::mutex> lock(ev.mu);
  if (ev.completed < ev.recorded || NowNs() < ev.time_ns) return cudaErrorNotReady;
  return cudaSuccess;
}

void SynchronizeEvent(EventState& ev) {
  int64_t t;
  {
    std::unique_lock<std::mutex> lock(ev.mu);
    uint64_t target = ev.recorded;
    ev.cv.wait(lock, [&] { return ev.completed >= target; });
    t = ev.time_ns;
  }
  SleepUntil(t);
}

cudaError_t ElapsedTime(EventState& a, EventState& b, float* ms) {
  ChargeCall(CallCost::kEventElapsedTime);
  if ((a.flags | b.flags) & cudaEventDisableTiming) return cudaErrorInvalidResourceHandle;
  int64_t ta, tb;
  int64_t now = NowNs();
  {
    std::scoped_lock lock(a.mu, b.mu);
    if (a.recorded == 0 || b.recorded == 0) return cudaErrorInvalidResourceHandle;
    if (a.completed < a.recorded || b.completed < b.recorded || now < a.time_ns ||
        now < b.time_ns) {
      return cudaErrorNotReady;
    }
    ta = a.time_ns;
    tb = b.time_ns;
  }
  *ms = static_cast<float>(static_cast<double>(tb - ta) / 1e6);
  return cudaSuccess;
}

cudaError_t SubmitCopy(Stream* s, void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  ChargeCall(CallCost::kLaunch);
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  for (const void* p : {static_cast<const void*>(dst), src}) {
    bool overflows = false;
    if (FindAllocation(p, count, nullptr, &overflows) && overflows) return cudaErrorInvalidValue;
  }
  Op op;
  op.kind = OpKind::kCopy;
  op.dst = dst;
  op.src = src;
  op.bytes = count;
  op.duration_ns = CopyDurationNs(dst, src, count, kind);
  return s->Submit(std::move(op));
}

cudaError_t SubmitFill(Stream* s, void* dst, uint32_t value, size_t element_size, size_t count) {
  ChargeCall(CallCost::kLaunch);
  if (count == 0) return cudaSuccess;
  if (dst == nullptr) return cudaErrorInvalidValue;
  size_t bytes = count * element_size;
  bool overflows = false;
  if (!FindAllocation(dst, bytes, nullptr, &overflows) || overflows) return cudaErrorInvalidValue;
  if (UniformBytes(value, element_size)) {
    Op op;
    op.kind = OpKind::kMemset;
    op.dst = dst;
    op.value = static_cast<int>(value & 0xff);
    op.bytes = bytes;
    op.duration_ns = MemsetDurationNs(bytes);
    return s->Submit(std::move(op));
  }
  auto holder = std::make_shared<TaskHolder>();
  holder->run = RunFill;
  holder->release = ReleaseFill;
  holder->ctx = new FillTask{dst, value, element_size, count, MemsetDurationNs(bytes)};
  Op op;
  op.kind = OpKind::kTask;
  op.task = std::move(holder);
  return s->Submit(std::move(op));
}

cudaError_t SubmitKernel(Stream* s, const KernelInfo& k) {
  ChargeCall(CallCost::kLaunch);
  Op op;
  op.kind = OpKind::kBusy;
  op.duration_ns = ComputeDurationNs(k.duration_ns, s->device());
  return s->Submit(std::move(op));
}

cudaError_t LaunchGraph(const GraphExec& exec, Stream* s) {
  ChargeCall(CallCost::kLaunch);
  s->WaitForRoom();  // one launch-queue entry: its operations are admitted together
  int64_t now = NowNs();
  for (const Op& captured : exec.ops) {
    Op op = captured;
    op.enqueue_ns = now;
    if (op.kind == OpKind::kRecord) {
      std::lock_guard<std::mutex> lock(op.event->mu);
      op.event_seq = ++op.event->recorded;
    } else if (op.kind == OpKind::kWait) {
      std::lock_guard<std::mutex> lock(op.event->mu);
      op.event_seq = op.event->recorded;
    }
    cudaError_t e = s->Submit(std::move(op), /*wait_for_room=*/false);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace xtsim

#include "hook/poller.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "format/registration.h"
#include "hook/cuda_api.h"
#include "hook/log.h"

namespace xtimer {
namespace hook {
namespace {

constexpr int64_t kReconnectNs = 1000000000;       // retry the daemon every second
// Read stack requests and notice a dropped daemon within 10 ms (one poll(2) each time).
constexpr int64_t kConnectionCheckNs = 10000000;
constexpr float kReanchorMs = 100.0f;              // keep float elapsed times short (precision)
constexpr size_t kMaxRememberedComms = 4096;       // CommRecords kept to re-send after a restart

void Log(const char* what, const std::string& detail) { LogLine("%s%s", what, detail.c_str()); }

}  // namespace

Poller::Poller(State* state) : state_(state) {}

void Poller::Start() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  running_.store(true);
  thread_ = std::thread([this] { Run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Poller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  stacks_.Stop();
  int fd = state_->socket_fd.exchange(-1);
  if (fd >= 0) close(fd);
}

uint64_t Poller::ring_dropped() const {
  format::RingHeader* h = header_.load();
  return h != nullptr ? h->dropped.load() : 0;
}

bool Poller::WaitFor(uint64_t queued, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (handled_.load() < queued) {
    if (!running_.load() || std::chrono::steady_clock::now() >= deadline) return false;
    cv_.notify_all();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

void Poller::Run() {
  pthread_setname_np(pthread_self(), "xtimer-poller");
  const Config& c = state_->config;
  format::Identity id;
  id.job = c.job;
  id.host = c.host;
  id.pod = c.pod;
  id.rank = c.rank;
  id.local_rank = c.local_rank;
  id.world_size = c.world_size;
  id.op_log = c.op_log;
  rank_known_ = c.rank >= 0;
  global_rank_ = c.rank;
  std::string error;
  ring_ = format::RingWriter::Create(c.ring_capacity, id, &error);
  if (ring_) {
    header_.store(ring_->header());
  } else {
    Log("no shared-memory ring, records are discarded: ", error);
  }

  int idle_ms = 1;
  for (;;) {
    bool busy = Cycle();
    idle_ms = busy ? 1 : std::min(idle_ms * 2, 20);
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) break;
    cv_.wait_for(lock, std::chrono::milliseconds(idle_ms));
    if (stop_) break;
  }
  Cycle();  // what completed meanwhile
  running_.store(false);
}

bool Poller::Cycle() {
  ResendPending();  // re-sent communicators before any new op record
  Drain();
  CompleteStreams();
  GrowPools();
  int64_t now = RealtimeNs();
  if (now >= next_epoch_ns_) {  // every signature may be timed again (budget.h)
    next_epoch_ns_ = now + budget::kEpochNs;
    state_->budget_epoch.fetch_add(1, std::memory_order_relaxed);
  }
  if (ring_) {
    PublishCounters();
    PublishInflight(now);
    ring_->Heartbeat(now);
    Register(now);
  }
  for (auto& kv : fifos_) {
    if (!kv.second.ops.empty()) return true;
  }
  return false;
}

void Poller::PublishCounters() {
  uint64_t untimed[format::kUntimedSlots];
  for (int i = 0; i < format::kUntimedSlots; ++i) untimed[i] = state_->untimed[i].load();
  ring_->PublishUntimed(untimed, format::kUntimedSlots);
  ring_->PublishHookOwnNs(state_->own_ns.load(std::memory_order_relaxed));
  uint64_t calls[format::kOpKindSlots], timed[format::kOpKindSlots];
  for (int i = 0; i < format::kOpKindSlots; ++i) {
    calls[i] = state_->op_calls[i].load(std::memory_order_relaxed);
    timed[i] = state_->op_timed[i].load(std::memory_order_relaxed);
  }
  ring_->PublishTimingRates(calls, timed, state_->config.budget_ppm);
  ring_->PublishTracked(state_->tracked_by_mark.load(std::memory_order_relaxed),
                        state_->tracked_by_nccl.load(std::memory_order_relaxed));
}

void Poller::GrowPools() {
  const int end = state_->device_end.load(std::memory_order_acquire);
  for (int d = 0; d < end; ++d) {
    DeviceState* ds = state_->devices[d].load(std::memory_order_acquire);
    if (ds == nullptr || !ds->ok) continue;
    size_t created = ds->created.load(std::memory_order_relaxed);
    if (created < kSteadyEvents ||
        (created < kMaxEvents && ds->pool.SizeApprox() < created / 4)) {
      if (UseDevice(d)) GrowEventPool(ds, kEventGrowStep);  // then no device switch inside
    }
    size_t marks = ds->marks_created.load(std::memory_order_relaxed);
    if (marks < kSteadyMarks || (marks < kMaxMarks && ds->marks.SizeApprox() < marks / 4)) {
      if (UseDevice(d)) GrowMarkPool(ds, kSteadyMarks / 2);
    }
  }
}

bool Poller::UseDevice(int device) {
  if (device == current_device_) return true;
  const CudaApi& api = Api();
  if (device < 0 || api.set_device(device) != cudaSuccess) {
    api.get_last_error();  // the poller thread's own error slot
    return false;
  }
  current_device_ = device;
  if (!capture_mode_set_) {
    // After the device: the exchange is a runtime call, which would otherwise make the thread
    // a context on device 0.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
    capture_mode_set_ = api.exchange_capture_mode(&mode) == cudaSuccess;
    if (!capture_mode_set_) api.get_last_error();
  }
  return true;
}

void Poller::Drain() {
  Pending p;
  while (state_->queue.Pop(&p)) {
    if (p.state == Pending::kReady) {
      if (p.rec.header.type == static_cast<uint8_t>(format::RecordType::kOp)) {
        Issue(p, nullptr);
        Finish(p);
      }
      Emit(&p);
      handled_.fetch_add(1);
      continue;
    }
    Fifo& f = fifos_[StreamKey{p.device, p.rec.op.stream}];
    Issue(p, &f);
    if ((p.state == Pending::kTimed || p.state == Pending::kTracked ||
         p.state == Pending::kProfiled) &&
        p.rec.op.group_id != 0) {
      f.queued_group_id = p.rec.op.group_id;
      f.queued_group_start = p.start;
    }
    f.ops.push_back(p);
  }
}

void Poller::CompleteStreams() {
  constexpr int kGrowCheckEvery = 256;  // a long backlog must not starve the pools meanwhile
  int since_check = 0;
  for (auto& kv : fifos_) {
    Fifo& f = kv.second;
    const bool all_done = TailDone(f);
    while (!f.ops.empty()) {
      if (!Complete(&f, &f.ops.front(), all_done)) break;
      f.ops.pop_front();
      handled_.fetch_add(1);
      if (++since_check == kGrowCheckEvery) {
        since_check = 0;
        GrowPools();
      }
    }
  }
}

bool Poller::TailDone(const Fifo& f) {
  if (f.ops.size() < 2) return false;  // one op: its own query is the same call
  const Pending& last = f.ops.back();
  // The per-thread default streams of several threads share one FIFO: no order between them.
  if (last.rec.op.stream == reinterpret_cast<uint64_t>(cudaStreamPerThread)) return false;
  if (last.end == nullptr || !UseDevice(last.device)) return false;
  const cudaError_t q = Api().event_query(last.end);
  if (q != cudaSuccess && q != cudaErrorNotReady) Api().get_last_error();  // the poller's own slot
  return q == cudaSuccess;
}

bool Poller::Complete(Fifo* fifo, Pending* p, bool done) {
  format::OpRecord& r = p->rec.op;
  if (p->state == Pending::kFollower) {
    if (fifo->group_id == r.group_id) {
      r.gpu_start_ns = fifo->group_start_ns;
      r.duration_ns = fifo->group_duration_ns;
      Finish(*p);
      Emit(p);
    } else {
      Finish(*p);  // its leader was not timed: nothing to report
    }
    return true;
  }
  if (p->state == Pending::kTracked) return CompleteTracked(fifo, p, done);
  if (p->state == Pending::kProfiled) return CompleteProfiled(fifo, p, done);
  const CudaApi& api = Api();
  cudaError_t q = !UseDevice(p->device) ? cudaErrorInvalidDevice
                  : done                ? cudaSuccess
                                        : api.event_query(p->end);
  if (q == cudaErrorNotReady) return false;
  DeviceState* ds = state_->devices[p->device].load(std::memory_order_acquire);
  bool ok = q == cudaSuccess;
  float dur_ms = 0, off_ms = 0;
  if (ok) {
    const cudaError_t e = api.event_elapsed_time(&dur_ms, p->start, p->end);
    if (e == cudaErrorNotReady && done) {  // launched from two threads out of queue order
      api.get_last_error();
      return false;
    }
    ok = e == cudaSuccess;
  }
  if (r.group_id != 0) fifo->finished_group_id = r.group_id;
  if (ok) ok = api.event_elapsed_time(&off_ms, ds->ref_event, p->start) == cudaSuccess;
  if (!ok) api.get_last_error();  // the poller thread's own error slot
  bool keep_start = false;
  if (ok) {
    r.duration_ns = std::llround(static_cast<double>(dur_ms) * 1e6);
    r.gpu_start_ns = ds->ref_host_ns + std::llround(static_cast<double>(off_ms) * 1e6);
    if (off_ms > kReanchorMs) {
      // Re-anchor on this op's start: later offsets stay short, so float ms keep ns precision.
      ds->pool.Push(ds->ref_event);
      ds->ref_event = p->start;
      ds->ref_host_ns = r.gpu_start_ns;
      keep_start = true;
    }
    if (r.group_id != 0) {
      fifo->group_id = r.group_id;
      fifo->group_start_ns = r.gpu_start_ns;
      fifo->group_duration_ns = r.duration_ns;
    }
  }
  if (!keep_start) ds->pool.Push(p->start);
  ds->pool.Push(p->end);
  Finish(*p);
  if (ok) Emit(p);
  return true;
}

bool Poller::CompleteTracked(Fifo* fifo, Pending* p, bool done) {
  const CudaApi& api = Api();
  cudaError_t q = done                  ? cudaSuccess
                  : UseDevice(p->device) ? api.event_query(p->end)
                                         : cudaErrorInvalidDevice;
  if (q == cudaErrorNotReady) return false;
  if (q != cudaSuccess) api.get_last_error();  // the poller thread's own error slot
  if (p->rec.op.group_id != 0) fifo->finished_group_id = p->rec.op.group_id;
  DeviceState* ds = state_->devices[p->device].load(std::memory_order_acquire);
  (p->mark_from_pool ? ds->pool : ds->marks).Push(p->end);
  state_->tracked_by_mark.fetch_add(1, std::memory_order_relaxed);
  Finish(*p);  // no record: nothing was timed (the ring header counts it)
  return true;
}

bool Poller::CompleteProfiled(Fifo* fifo, Pending* p, bool done) {
  // `done`: a later op of this stream has completed, and a stream completes in order.
  if (!done && !nccl_profiler::Done(p->launch)) return false;
  nccl_profiler::Release(p->launch);
  state_->tracked_by_nccl.fetch_add(1, std::memory_order_relaxed);
  if (p->rec.op.group_id != 0) fifo->finished_group_id = p->rec.op.group_id;
  Finish(*p);  // no record, as a mark's (no CUDA call either)
  return true;
}

void Poller::Issue(const Pending& p, const Fifo* fifo) {
  const format::OpRecord& r = p.rec.op;
  Flight& f = flights_[FlightKey{r.comm_id, r.device}];
  if (fifo != nullptr && r.kind == static_cast<uint8_t>(format::OpKind::kCollective)) {
    InflightColl c;
    c.rec = r;
    c.follower = p.state == Pending::kFollower;
    if (!c.follower) {
      c.start = p.start;
      c.untimed = p.state == Pending::kTracked || p.state == Pending::kProfiled;
    } else if (fifo->queued_group_id == r.group_id) {
      c.start = fifo->queued_group_start;
      c.untimed = c.start == nullptr;  // its group's lead is tracked only
    }
    f.colls.push_back(c);
  }
  // Row 0 counts ops. A communicator's row holds collective sequence numbers only (identical on
  // every rank); its p2p ops (per-peer numbers) count towards the oldest op in flight.
  if (r.comm_id == 0) {
    ++f.issued;
  } else if (r.kind != static_cast<uint8_t>(format::OpKind::kP2P)) {
    f.issued = std::max(f.issued, r.seq);
  }
  f.launches.push_back(r.cpu_launch_ns);
  f.last_activity_ns = r.cpu_launch_ns;
  inflight_dirty_ = true;
}

void Poller::Finish(const Pending& p) {
  const format::OpRecord& r = p.rec.op;
  auto it = flights_.find(FlightKey{r.comm_id, r.device});
  if (it == flights_.end()) return;
  Flight& f = it->second;
  auto same = [&r](const InflightColl& c) {
    return c.rec.cpu_launch_ns == r.cpu_launch_ns && c.rec.seq == r.seq && c.rec.op == r.op;
  };
  if (!f.colls.empty() && same(f.colls.front())) {
    f.colls.pop_front();
  } else {
    auto c = std::find_if(f.colls.begin(), f.colls.end(), same);
    if (c != f.colls.end()) f.colls.erase(c);
  }
  if (r.kind == static_cast<uint8_t>(format::OpKind::kCollective)) DropPassed(&f, r.seq);
  // Ops of one communicator (or of row 0) almost always complete in issue order.
  if (!f.launches.empty() && f.launches.front() == r.cpu_launch_ns) {
    f.launches.pop_front();
  } else {
    auto l = std::find(f.launches.begin(), f.launches.end(), r.cpu_launch_ns);
    if (l != f.launches.end()) f.launches.erase(l);
  }
  inflight_dirty_ = true;
  if (r.comm_id == 0) {
    ++f.completed;
  } else if (r.kind != static_cast<uint8_t>(format::OpKind::kP2P)) {
    f.completed = std::max(f.completed, r.seq);
  }
}

void Poller::DropPassed(Flight* f, uint64_t seq) {
  // A communicator's collectives run one after another: once `seq` completed, an earlier one
  // still listed was missed (seen once under load: it made a false hang verdict), so it goes,
  // with its launch.
  while (!f->colls.empty() && f->colls.front().rec.seq != 0 && f->colls.front().rec.seq < seq) {
    const int64_t launch = f->colls.front().rec.cpu_launch_ns;
    auto l = std::find(f->launches.begin(), f->launches.end(), launch);
    if (l != f->launches.end()) f->launches.erase(l);
    f->colls.pop_front();
  }
}

void Poller::EmitName(uint32_t name_id) {
  if (name_id < names_sent_.size() && names_sent_[name_id]) return;
  if (names_sent_.size() <= name_id) names_sent_.resize(name_id + 1, false);
  names_sent_[name_id] = true;
  const std::string name = state_->kernels.Name(name_id);
  const size_t parts = format::NamePartCount(name.size());
  for (size_t i = 0; i < parts; ++i) Write(format::NamePart(name_id, name, i));
}

void Poller::EmitNvtxString(uint32_t id) {
  if (id == 0 || (id < nvtx_strings_sent_.size() && nvtx_strings_sent_[id])) return;
  if (nvtx_strings_sent_.size() <= id) nvtx_strings_sent_.resize(id + 1, false);
  nvtx_strings_sent_[id] = true;
  const std::string text = state_->nvtx_strings.Text(id);
  const size_t parts = format::NamePartCount(text.size());
  for (size_t i = 0; i < parts; ++i) {
    Write(format::NamePart(id, text, i, format::RecordType::kNvtxString));
  }
}

void Poller::Emit(Pending* p) {
  if (p->rec.header.type == static_cast<uint8_t>(format::RecordType::kNvtx)) {
    EmitNvtxString(p->rec.nvtx.domain_id);
    EmitNvtxString(p->rec.nvtx.name_id);
    Write(p->rec);
    return;
  }
  if (p->rec.header.type == static_cast<uint8_t>(format::RecordType::kComm)) {
    format::CommRecord& c = p->rec.comm;
    if (c.global_rank == -2) {  // a root communicator (made by an init call)
      if (!rank_known_) {
        rank_known_ = true;
        global_rank_ = c.rank;
        if (ring_) {
          const Config& cfg = state_->config;
          ring_->SetRank(c.rank, cfg.local_rank, cfg.world_size >= 0 ? cfg.world_size : c.size);
        }
      }
    }
    c.global_rank = global_rank_;
    const std::pair<uint64_t, int> key(c.comm_id, c.device);
    if (comm_records_.size() < kMaxRememberedComms || comm_records_.count(key) != 0) {
      comm_records_[key] = p->rec;
    }
    Write(p->rec);
    return;
  }
  if (p->rec.op.name_id != 0) EmitName(p->rec.op.name_id);
  Write(p->rec);
}

void Poller::Write(const format::RecordSlot& r) {
  if (!ring_) return;
  if (ring_->Write(r)) written_.fetch_add(1);
}

void Poller::PublishInflight(int64_t now) {
  // The table only changes when ops are issued or complete; republish at least every 100 ms (a
  // queued collective's state changes without either).
  if (!inflight_dirty_ && now < next_publish_ns_) return;
  inflight_dirty_ = false;
  next_publish_ns_ = now + 100000000;
  // Rows 0 (every op that is not a collective or p2p, per device), then communicators (per
  // device), busiest first.
  publish_order_.clear();
  for (auto& kv : flights_) {
    const Flight& f = kv.second;
    int64_t busy = kv.first.first == 0    ? INT64_MAX
                   : f.launches.empty() ? f.last_activity_ns
                                        : INT64_MAX - 1;
    publish_order_.push_back({busy, &kv});
  }
  std::sort(publish_order_.begin(), publish_order_.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second->first > b.second->first;
  });
  int n = 0;
  for (auto& o : publish_order_) {
    if (n >= format::kMaxInflight) break;
    Flight& f = o.second->second;
    format::InflightRow& row = publish_rows_[n++];
    row = format::InflightRow();
    row.comm_id = o.second->first.first;
    row.device = o.second->first.second;
    row.last_issued_seq = f.issued;
    row.last_completed_seq = f.completed;
    row.oldest_launch_ns = f.launches.empty() ? 0 : f.launches.front();
    if (!f.colls.empty()) DescribeOldest(&f.colls.front(), &row.oldest);
  }
  ring_->PublishInflight(publish_rows_, n);
}

void Poller::DescribeOldest(InflightColl* c, format::InflightCollective* out) {
  const format::OpRecord& r = c->rec;
  if (!c->started && c->start != nullptr) {
    auto fifo = fifos_.find(StreamKey{r.device, r.stream});
    if (c->follower && fifo != fifos_.end() && fifo->second.finished_group_id == r.group_id) {
      // Its leader completed (and returned its events): the group ran.
      c->started = true;
      c->start = nullptr;
      if (fifo->second.group_id == r.group_id) c->gpu_start_ns = fifo->second.group_start_ns;
    } else if (UseDevice(r.device)) {
      const CudaApi& api = Api();
      cudaError_t q = api.event_query(c->start);
      if (q == cudaSuccess) {
        c->started = true;
        DeviceState* ds = r.device >= 0 && r.device < kMaxDevices
                              ? state_->devices[r.device].load(std::memory_order_acquire)
                              : nullptr;
        float off_ms = 0;
        if (ds != nullptr &&
            api.event_elapsed_time(&off_ms, ds->ref_event, c->start) == cudaSuccess) {
          c->gpu_start_ns = ds->ref_host_ns + std::llround(static_cast<double>(off_ms) * 1e6);
        } else {
          api.get_last_error();  // the poller thread's own error slot
        }
      } else if (q != cudaErrorNotReady) {
        api.get_last_error();
        return;  // unknown: no detail
      }
    }
  }
  if (c->start == nullptr && !c->started && !c->untimed) return;  // untracked: nothing to say
  out->state = c->untimed   ? format::InflightState::kIssued
               : c->started ? format::InflightState::kStarted
                            : format::InflightState::kQueued;
  out->op = r.op;
  out->dtype = r.dtype;
  out->seq = r.seq;
  out->count = r.count;
  out->bytes = r.bytes;
  out->root = r.root;
  out->comm_size = r.comm_size;
  out->launch_ns = r.cpu_launch_ns;
  out->gpu_start_ns = c->started && c->gpu_start_ns > 0 ? c->gpu_start_ns : 0;
  if (!c->started && !c->untimed) DescribeBlocker(*c, &out->blocker);
}

void Poller::DescribeBlocker(const InflightColl& c, format::InflightBlocker* out) {
  auto fifo = fifos_.find(StreamKey{c.rec.device, c.rec.stream});
  if (fifo == fifos_.end() || fifo->second.ops.empty()) return;
  const format::OpRecord& head = fifo->second.ops.front().rec.op;
  const bool itself = head.cpu_launch_ns == c.rec.cpu_launch_ns && head.seq == c.rec.seq &&
                      head.comm_id == c.rec.comm_id;
  const bool its_group = c.rec.group_id != 0 && head.group_id == c.rec.group_id;
  if (itself || its_group) return;  // nothing timed ahead of it: unknown
  out->op = head.op;
  out->kind = head.kind;
  out->name_id = head.name_id;
  out->m = head.m;
  out->n = head.n;
  out->k = head.k;
  out->bytes = head.bytes;
  out->launch_ns = head.cpu_launch_ns;
  out->comm_id = head.comm_id;
  out->seq = head.seq;
  if (head.name_id != 0) EmitName(head.name_id);  // the daemon can name the kernel
}

void Poller::Register(int64_t now) {
  int fd = state_->socket_fd.load();
  if (fd >= 0) {
    if (now < next_check_ns_) return;
    next_check_ns_ = now + kConnectionCheckNs;
    pollfd pfd = {fd, POLLIN | POLLRDHUP, 0};
    if (poll(&pfd, 1, 0) <= 0) return;
    // Requests first: a daemon may ask and then close.
    const bool open = ReadRequests(fd);
    if (!open || (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0) {
      if (state_->socket_fd.compare_exchange_strong(fd, -1)) close(fd);
      if (state_->config.verbose) Log("daemon connection closed; retrying", "");
      next_connect_ns_ = now;
    }
    return;
  }
  if (now < next_connect_ns_) return;
  next_connect_ns_ = now + kReconnectNs;
  std::string error;
  fd = format::ConnectToDaemon(state_->config.socket_path, &error);
  if (fd < 0) {
    if (state_->config.verbose) Log("daemon not reachable: ", error);
    return;
  }
  if (!format::CheckDaemonPeer(fd, state_->config.socket_path,
                               format::TrustedDaemonUids(state_->config.daemon_uid), &error)) {
    // Said once: the check is retried every kReconnectNs, and a trusted daemon may come.
    if (!peer_refusal_logged_ || state_->config.verbose) Log("", error);
    peer_refusal_logged_ = true;
    close(fd);
    return;
  }
  if (!format::SendRing(fd, ring_->fd(), &error, state_->config.job_token)) {
    if (state_->config.verbose) Log("registration failed: ", error);
    close(fd);
    return;
  }
  state_->socket_fd.store(fd);
  request_have_ = 0;
  next_check_ns_ = now + kConnectionCheckNs;
  if (++registrations_ > 1) ResendIdentity();
}

bool Poller::ReadRequests(int fd) {
  // A bounded number per cycle: a daemon that floods requests cannot hold the poller.
  for (int requests = 0; requests < 64;) {
    ssize_t n = recv(fd, request_buf_ + request_have_, sizeof(request_buf_) - request_have_,
                     MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    request_have_ += static_cast<size_t>(n);
    if (request_have_ < sizeof(request_buf_)) continue;
    request_have_ = 0;
    ++requests;
    format::StackRequest request;
    std::string error;
    if (!format::ParseStackRequest(request_buf_, sizeof(request_buf_), &request, &error)) {
      Log("dropping the daemon connection: ", error);
      return false;
    }
    const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0 || !stacks_.Submit(copy, request.request_id)) {
      Log("stack request not taken: ", copy < 0 ? strerror(errno) : "too many waiting");
    }
  }
  return true;
}

void Poller::ResendIdentity() {
  // The ring's identity (job, host, rank) lives in its header; communicators and names were
  // records, read by the previous daemon. The ring is often full now (nobody read it while the
  // daemon was away): the communicators wait in resend_ and go before any op record as soon as
  // the new daemon makes room (ResendPending, at the start of every cycle).
  resend_.clear();
  for (const auto& kv : comm_records_) resend_.push_back(kv.first);
  names_sent_.assign(names_sent_.size(), false);
  nvtx_strings_sent_.assign(nvtx_strings_sent_.size(), false);
  ResendPending();
}

void Poller::ResendPending() {
  format::RingHeader* h = ring_ ? ring_->header() : nullptr;
  while (h != nullptr && !resend_.empty()) {
    // Checked first: a full ring would count each retry as a dropped record.
    const uint64_t w = h->write_pos.load(std::memory_order_relaxed);
    const uint64_t r = h->read_pos.load(std::memory_order_acquire);
    if (r > w || w - r >= h->capacity) return;
    auto it = comm_records_.find(resend_.front());
    resend_.pop_front();
    if (it != comm_records_.end()) Write(it->second);
  }
}

}  // namespace hook
}  // namespace xtimer

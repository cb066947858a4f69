#include "test/gpusim/nccl/ops.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "test/gpusim/common/call_cost.h"
#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/nccl/backoff.h"
#include "test/gpusim/nccl/faults.h"
#include "test/gpusim/nccl/profiler_events.h"
#include "test/gpusim/sim_api_client.h"

namespace xtsim {
namespace nccl {
namespace {

double AllReduceFactor(int n) { return 2.0 * (n - 1) / n; }
double ShareFactor(int n) { return static_cast<double>(n - 1) / n; }
double OneFactor(int) { return 1.0; }

// Indexed by OpKind.
// clang-format off
// name, p2p, rooted, reduces, in_all_blocks, out_all_blocks, root_sends_only, root_recvs_only,
// bus_factor, bytes_times_nranks
const OpSpec kSpecs[] = {
    {"ncclAllReduce",     false, false, true,  false, false, false, false, AllReduceFactor, false},
    {"ncclAllGather",     false, false, false, false, true,  false, false, ShareFactor,     true},
    {"ncclReduceScatter", false, false, true,  true,  false, false, false, ShareFactor,     true},
    {"ncclBroadcast",     false, true,  false, false, false, true,  false, OneFactor,       false},
    {"ncclReduce",        false, true,  true,  false, false, false, true,  OneFactor,       false},
    {"ncclAlltoAll",      false, false, false, true,  true,  false, false, ShareFactor,     true},
    {"ncclGather",        false, true,  false, false, true,  false, true,  ShareFactor,     true},
    {"ncclScatter",       false, true,  false, true,  false, true,  false, ShareFactor,     true},
    {"ncclSend",          true,  false, false, false, false, false, false, OneFactor,       false},
    {"ncclRecv",          true,  false, false, false, false, false, false, OneFactor,       false},
};
// clang-format on
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(OpKind::kRecv) + 1,
              "kSpecs must have one row per OpKind");

// `start_ns`: when the transfer starts (every participant has arrived), NowNs's clock.
int64_t OpDurationNs(const Op& op, size_t bytes, int64_t start_ns) {
  const OpSpec& spec = SpecOf(op.kind);
  const Comm& c = *op.comm;
  if (spec.p2p) return DurationNs(c.peer_link(op.peer), static_cast<double>(bytes), 1.0, start_ns);
  double algorithm_bytes = static_cast<double>(bytes) * (spec.bytes_times_nranks ? c.nranks() : 1);
  return DurationNs(c.link(), algorithm_bytes, spec.bus_factor(c.nranks()), start_ns);
}

size_t OpBytes(const Op& op) { return op.count * KernelsFor(op.datatype)->size; }

// What a member called, as two words the members compare: the collective, the datatype, the
// reduction (of a reducing collective) and the root (of a rooted one); then the count.
std::array<uint64_t, 2> CollectiveSignature(const Op& op) {
  const OpSpec& spec = SpecOf(op.kind);
  const uint64_t red = spec.reduces ? static_cast<uint64_t>(op.reduction.base) & 0xff : 0xff;
  const uint64_t root = spec.rooted ? static_cast<uint32_t>(op.peer) : 0xffffffffu;
  const uint64_t word = static_cast<uint64_t>(op.kind) << 56 |
                        (static_cast<uint64_t>(op.datatype) & 0xff) << 48 | red << 40 | root;
  return {word, static_cast<uint64_t>(op.count)};
}

// One operation in progress on this rank. Construction is the arrival; Progress() moves it as far
// as it can without blocking.
class Runner {
 public:
  enum class Status { kBlocked, kProgressed, kDone };
  virtual ~Runner() = default;
  virtual Status Progress() = 0;
  int64_t end_ns() const { return end_ns_; }

 protected:
  int64_t end_ns_ = 0;
};

// A collective, in rounds: publish a chunk of every input block into this rank's staging slot,
// pass the communicator's barrier, compute the matching chunk of the output from all slots. The
// slots are double-buffered: round g writes buffer g % 2, which every rank finished reading in
// round g - 2, before the barrier of round g - 1 let anyone reach round g. The first barrier also
// publishes every rank's arrival time and call signature. Members whose calls differ (another
// collective, count, datatype, reduction or root), and every member of a collective that
// XTIMER_SIM_STUCK names, stay in it forever after that barrier, as real NCCL kernels wait for
// data that never comes; only ncclCommAbort releases them.
class CollectiveRunner : public Runner {
 public:
  CollectiveRunner(const Op& op, int64_t arrival_ns)
      : op_(op),
        spec_(SpecOf(op.kind)),
        comm_(*op.comm),
        seg_(comm_.segment()),
        kernels_(*KernelsFor(op.datatype)),
        n_(comm_.nranks()),
        rank_(comm_.rank()),
        in_blocks_(spec_.in_all_blocks ? static_cast<size_t>(n_) : 1),
        chunk_(seg_.slot_bytes() / (in_blocks_ * kernels_.size)),
        rounds_(std::max<size_t>(1, (op.count + chunk_ - 1) / chunk_)),
        publishes_(!spec_.root_sends_only || rank_ == op.peer),
        receives_(!spec_.root_recvs_only || rank_ == op.peer),
        sources_(static_cast<size_t>(n_)) {
    Comm::Engine& e = comm_.engine;
    seq_ = e.collectives++;
    ShmRank* me = seg_.rank(rank_);
    me->arrival_ns[seq_ & 1].store(arrival_ns, std::memory_order_relaxed);
    const std::array<uint64_t, 2> sig = CollectiveSignature(op);
    for (size_t w = 0; w < sig.size(); ++w) {
      me->signature[seq_ & 1][w].store(sig[w], std::memory_order_relaxed);
    }
    PrepareScale();
    PublishAndArrive();
  }

  Status Progress() override {
    if (spinning_) return Status::kBlocked;
    if (seg_.header()->data_barrier.load(std::memory_order_acquire) < barrier_target_) {
      return Status::kBlocked;
    }
    if (round_ == 0) {
      for (int r = 0; r < n_; ++r) {
        start_ns_ =
            std::max(start_ns_, seg_.rank(r)->arrival_ns[seq_ & 1].load(std::memory_order_relaxed));
      }
      if (NeverCompletes()) return Status::kBlocked;
    }
    Consume();
    if (++round_ == rounds_) {
      end_ns_ = start_ns_ + OpDurationNs(op_, OpBytes(op_), start_ns_);
      return Status::kDone;
    }
    PublishAndArrive();
    return Status::kProgressed;
  }

 private:
  size_t ElementsThisRound() const {
    return std::min(chunk_, op_.count - std::min(op_.count, round_ * chunk_));
  }

  // The scalar every input is multiplied by, read when the collective runs (a device scalar of
  // ncclScalarDevice may change between launches of a captured graph).
  void PrepareScale() {
    const Reduction& red = op_.reduction;
    if (red.scale == Reduction::Scale::kReciprocalOfNranks) {
      kernels_.reciprocal(scalar_, n_);
    } else if (red.scale == Reduction::Scale::kPreMulSum) {
      const void* src =
          red.premulsum.on_device ? red.premulsum.device_scalar : red.premulsum.scalar;
      memcpy(scalar_, src, kernels_.size);
    }
  }

  void PublishAndArrive() {
    Comm::Engine& e = comm_.engine;
    buffer_ = static_cast<int>(e.rounds++ & 1);
    if (publishes_) Publish();
    barrier_target_ = ++e.barriers * static_cast<uint64_t>(n_);
    seg_.header()->data_barrier.fetch_add(1, std::memory_order_acq_rel);
  }

  void Publish() {
    size_t elems = ElementsThisRound();
    size_t esz = kernels_.size;
    uint8_t* slot = seg_.staging(rank_, buffer_);
    const auto* send = static_cast<const uint8_t*>(op_.sendbuff);
    for (size_t b = 0; b < in_blocks_; ++b) {
      const uint8_t* src = send + (b * op_.count + round_ * chunk_) * esz;
      uint8_t* dst = slot + b * chunk_ * esz;
      if (op_.reduction.scale != Reduction::Scale::kNone && spec_.reduces) {
        kernels_.scale(dst, src, elems, scalar_);
      } else if (elems > 0) {
        memcpy(dst, src, elems * esz);
      }
    }
  }

  void Consume() {
    if (!receives_) return;
    size_t elems = ElementsThisRound();
    if (elems == 0) return;
    size_t esz = kernels_.size;
    // The block of each slot meant for this rank.
    size_t block = spec_.in_all_blocks ? static_cast<size_t>(rank_) : 0;
    auto* recv = static_cast<uint8_t*>(op_.recvbuff);
    if (spec_.reduces) {
      for (int r = 0; r < n_; ++r) {
        sources_[static_cast<size_t>(r)] = seg_.staging(r, buffer_) + block * chunk_ * esz;
      }
      uint8_t* dst = recv + round_ * chunk_ * esz;
      kernels_.reduce(dst, sources_.data(), n_, elems, op_.reduction.base);
      if (op_.reduction.divide_by_nranks) kernels_.divide(dst, elems, n_);
      return;
    }
    size_t out_blocks = spec_.out_all_blocks ? static_cast<size_t>(n_) : 1;
    for (size_t j = 0; j < out_blocks; ++j) {
      int from = spec_.out_all_blocks ? static_cast<int>(j) : op_.peer;
      const uint8_t* src = seg_.staging(from, buffer_) + block * chunk_ * esz;
      memcpy(recv + (j * op_.count + round_ * chunk_) * esz, src, elems * esz);
    }
  }

  // After the first barrier: whether the members' calls differ or XTIMER_SIM_STUCK names this
  // collective. Then this rank spins in it for good.
  bool NeverCompletes() {
    std::vector<int> members;
    bool mismatch = false;
    const ShmRank* me = seg_.rank(rank_);
    for (int r = 0; r < n_; ++r) {
      const ShmRank* peer = seg_.rank(r);
      members.push_back(peer->global_rank);
      for (size_t w = 0; w < 2; ++w) {
        mismatch |= peer->signature[seq_ & 1][w].load(std::memory_order_relaxed) !=
                    me->signature[seq_ & 1][w].load(std::memory_order_relaxed);
      }
    }
    const bool stuck = StuckCollective(members, comm_.creation_index(), seq_);
    if (!mismatch && !stuck) return false;
    spinning_ = true;
    if (stuck) {
      Warn("XTIMER_SIM_STUCK: rank %d is stuck in collective %llu (%s) of communicator #%d",
           comm_.global_rank(), static_cast<unsigned long long>(seq_ + 1), spec_.name,
           comm_.creation_index());
    } else {
      Debug("nccl: rank %d of communicator #%d: the members' calls of collective %llu differ; "
            "it never completes",
            rank_, comm_.creation_index(), static_cast<unsigned long long>(seq_ + 1));
    }
    return true;
  }

  const Op& op_;
  const OpSpec& spec_;
  Comm& comm_;
  Segment& seg_;
  const TypeKernels& kernels_;
  const int n_;
  const int rank_;
  const size_t in_blocks_;
  const size_t chunk_;  // elements per block per round
  const size_t rounds_;
  const bool publishes_;
  const bool receives_;
  std::vector<const void*> sources_;
  uint8_t scalar_[kMaxElementSize] = {};
  uint64_t seq_ = 0;
  size_t round_ = 0;
  int buffer_ = 0;
  uint64_t barrier_target_ = 0;
  int64_t start_ns_ = 0;
  bool spinning_ = false;
};

// One send or recv. Message m of a (sender, receiver) pair is matched with message m of the other
// side: each side announces its arrival (and the sender its size), waits for the other's, then the
// bytes stream through the pair's ring. Messages of one pair run one after another.
class P2pRunner : public Runner {
 public:
  P2pRunner(const Op& op, int64_t arrival_ns)
      : op_(op),
        comm_(*op.comm),
        send_(op.kind == OpKind::kSend),
        peer_(static_cast<size_t>(op.peer)),
        ch_(*(send_ ? comm_.segment().p2p(comm_.rank(), op.peer)
                    : comm_.segment().p2p(op.peer, comm_.rank()))),
        ring_(send_ ? comm_.segment().ring(comm_.rank(), op.peer)
                    : comm_.segment().ring(op.peer, comm_.rank())),
        ring_bytes_(comm_.segment().p2p_bytes()),
        arrival_ns_(arrival_ns),
        own_bytes_(OpBytes(op)) {
    Comm::Engine& e = comm_.engine;
    message_ = send_ ? e.sends_started[peer_]++ : e.recvs_started[peer_]++;
  }

  Status Progress() override {
    switch (stage_) {
      case Stage::kWaitTurn:
        return WaitTurn();
      case Stage::kWaitPeer:
        return WaitPeer();
      case Stage::kData:
        return send_ ? Push() : Pull();
    }
    return Status::kBlocked;
  }

 private:
  enum class Stage { kWaitTurn, kWaitPeer, kData };

  uint64_t& Done() {
    Comm::Engine& e = comm_.engine;
    return send_ ? e.sends_done[peer_] : e.recvs_done[peer_];
  }

  Status WaitTurn() {
    if (Done() != message_) return Status::kBlocked;
    size_t parity = message_ & 1;
    if (send_) {
      ch_.send_bytes[parity].store(own_bytes_, std::memory_order_relaxed);
      ch_.send_arrival_ns[parity].store(arrival_ns_, std::memory_order_relaxed);
      ch_.send_arrived.store(message_ + 1, std::memory_order_release);
    } else {
      ch_.recv_arrival_ns[parity].store(arrival_ns_, std::memory_order_relaxed);
      ch_.recv_arrived.store(message_ + 1, std::memory_order_release);
    }
    stage_ = Stage::kWaitPeer;
    return Status::kProgressed;
  }

  Status WaitPeer() {
    const auto& arrived = send_ ? ch_.recv_arrived : ch_.send_arrived;
    if (arrived.load(std::memory_order_acquire) < message_ + 1) return Status::kBlocked;
    size_t parity = message_ & 1;
    int64_t peer_arrival =
        (send_ ? ch_.recv_arrival_ns : ch_.send_arrival_ns)[parity].load(std::memory_order_relaxed);
    total_ = send_ ? own_bytes_ : ch_.send_bytes[parity].load(std::memory_order_relaxed);
    if (!send_ && total_ != own_bytes_) {
      // The real NCCL requires matching counts; take what was sent, keep what fits.
      comm_.SetAsyncError(ncclInvalidUsage);
      Warn("nccl: ncclRecv on rank %d expected %zu bytes from rank %zu, which sent %zu",
           comm_.rank(), own_bytes_, peer_, total_);
    }
    const int64_t start = std::max(arrival_ns_, peer_arrival);
    end_ns_ = start + OpDurationNs(op_, total_, start);
    stage_ = Stage::kData;
    return Finish(Status::kProgressed);
  }

  Status Push() {
    const auto* src = static_cast<const uint8_t*>(op_.sendbuff);
    bool moved = false;
    while (moved_ < total_) {
      uint64_t head = ch_.head.load(std::memory_order_relaxed);
      uint64_t space = ring_bytes_ - (head - ch_.tail.load(std::memory_order_acquire));
      if (space == 0) break;
      size_t at = head % ring_bytes_;
      size_t n = std::min({static_cast<size_t>(space), total_ - moved_, ring_bytes_ - at});
      memcpy(ring_ + at, src + moved_, n);
      ch_.head.store(head + n, std::memory_order_release);
      moved_ += n;
      moved = true;
    }
    return Finish(moved ? Status::kProgressed : Status::kBlocked);
  }

  Status Pull() {
    auto* dst = static_cast<uint8_t*>(op_.recvbuff);
    bool moved = false;
    while (moved_ < total_) {
      uint64_t tail = ch_.tail.load(std::memory_order_relaxed);
      uint64_t avail = ch_.head.load(std::memory_order_acquire) - tail;
      if (avail == 0) break;
      size_t at = tail % ring_bytes_;
      size_t n = std::min({static_cast<size_t>(avail), total_ - moved_, ring_bytes_ - at});
      if (moved_ < own_bytes_) memcpy(dst + moved_, ring_ + at, std::min(n, own_bytes_ - moved_));
      ch_.tail.store(tail + n, std::memory_order_release);
      moved_ += n;
      moved = true;
    }
    return Finish(moved ? Status::kProgressed : Status::kBlocked);
  }

  Status Finish(Status status) {
    if (stage_ != Stage::kData || moved_ < total_) return status;
    ++Done();
    return Status::kDone;
  }

  const Op& op_;
  Comm& comm_;
  const bool send_;
  const size_t peer_;
  ShmP2p& ch_;
  uint8_t* const ring_;
  const size_t ring_bytes_;
  const int64_t arrival_ns_;
  const size_t own_bytes_;
  uint64_t message_ = 0;
  Stage stage_ = Stage::kWaitTurn;
  size_t total_ = 0;
  size_t moved_ = 0;
};

std::unique_ptr<Runner> MakeRunner(const Op& op, int64_t arrival_ns) {
  if (SpecOf(op.kind).p2p) return std::make_unique<P2pRunner>(op, arrival_ns);
  return std::make_unique<CollectiveRunner>(op, arrival_ns);
}

// The operations of one communicator in a launch, cut into phases (see ops.h, Time).
struct Chain {
  Comm* comm;
  std::vector<std::vector<const Op*>> phases;
};

std::vector<Chain> BuildChains(const std::vector<Op>& ops) {
  std::vector<Chain> chains;
  for (const Op& op : ops) {
    auto it = std::find_if(chains.begin(), chains.end(),
                           [&](const Chain& c) { return c.comm == op.comm.get(); });
    if (it == chains.end()) it = chains.insert(chains.end(), Chain{op.comm.get(), {}});
    bool p2p = SpecOf(op.kind).p2p;
    if (p2p && !it->phases.empty() && SpecOf(it->phases.back().front()->kind).p2p) {
      it->phases.back().push_back(&op);
    } else {
      it->phases.push_back({&op});
    }
  }
  return chains;
}

struct ChainRun {
  const Chain* chain;
  size_t phase = 0;
  int64_t time_ns;                               // arrival of the next phase
  std::vector<std::unique_ptr<Runner>> runners;  // the current phase; nullptr once done

  bool done() const { return phase == chain->phases.size(); }

  // Returns true when something moved.
  bool Step() {
    bool progressed = false;
    if (runners.empty()) {
      for (const Op* op : chain->phases[phase]) runners.push_back(MakeRunner(*op, time_ns));
      progressed = true;
    }
    bool all_done = true;
    for (std::unique_ptr<Runner>& r : runners) {
      if (r == nullptr) continue;
      Runner::Status s = r->Progress();
      while (s == Runner::Status::kProgressed) s = r->Progress();
      if (s == Runner::Status::kDone) {
        Debug("nccl: rank %d of communicator #%d: operation arrived at %lld, ends at %lld",
              chain->comm->rank(), chain->comm->creation_index(), static_cast<long long>(time_ns),
              static_cast<long long>(r->end_ns()));
        next_time_ns = std::max(next_time_ns, r->end_ns());
        r.reset();
        progressed = true;
      } else {
        all_done = false;
      }
    }
    if (all_done) {
      time_ns = std::max(time_ns, next_time_ns);
      runners.clear();
      ++phase;
    }
    return progressed;
  }

  int64_t next_time_ns = 0;
};

// Runs the operations of a launch to completion (or until a communicator is aborted) and returns
// the virtual time at which they end.
int64_t RunOps(const std::vector<Op>& ops, int64_t start_ns) {
  std::vector<Chain> chains = BuildChains(ops);
  // Another launch on another stream may use the same communicators: serialize per communicator,
  // locking in address order so that two launches cannot deadlock on each other's locks.
  std::vector<Comm*> comms;
  for (const Chain& c : chains) comms.push_back(c.comm);
  std::sort(comms.begin(), comms.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Comm* c : comms) locks.emplace_back(c->run_mu);

  std::vector<ChainRun> runs;
  for (const Chain& c : chains) runs.push_back(ChainRun{&c, 0, start_ns, {}, start_ns});
  Backoff backoff;
  for (;;) {
    bool progressed = false, all_done = true;
    for (ChainRun& run : runs) {
      if (run.done()) continue;
      if (run.chain->comm->aborted()) {
        run.phase = run.chain->phases.size();  // give up: the communicator is gone
        continue;
      }
      progressed |= run.Step();
      all_done &= run.done();
    }
    if (all_done) break;
    if (progressed) {
      backoff.Reset();
    } else if (backoff.Pause()) {
      for (Comm* c : comms) c->CheckPeersAlive();
    }
  }
  int64_t end = start_ns;
  for (const ChainRun& run : runs) end = std::max(end, run.time_ns);
  return end;
}

// The tasks of one launch (one per stream) meet here; the last to arrive runs the operations.
// A captured launch runs once per graph launch: `generation_` tells the runs apart.
class GroupLaunch {
 public:
  GroupLaunch(std::vector<Op> ops, int streams) : ops_(std::move(ops)), expected_(streams) {}

  // The profiled plans of the launch, one per communicator with profiled tasks (set before the
  // tasks are enqueued).
  struct Plan {
    std::shared_ptr<ProfPlan> prof;
    Comm* comm;
    cudaStream_t stream;  // the stream of its first operation (NCCL's launch stream)
    bool proxied;         // the proxy reports its kernel channels (ProfNeedsProxy)
    bool replayed;        // captured and proxied: task events at each graph launch
  };
  std::vector<Plan> plans;

  int64_t Run(int64_t start_ns) {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t generation = generation_;
    latest_start_ns_ = std::max(latest_start_ns_, start_ns);
    if (++arrived_ < expected_ && !cancelled_) {
      cv_.wait(lock, [&] { return generation_ != generation || cancelled_; });
      return generation_ != generation ? last_end_ns_ : start_ns;
    }
    if (cancelled_) return start_ns;
    int64_t start = latest_start_ns_;
    lock.unlock();
    std::vector<std::shared_ptr<ProfPlan>> profs = StartPlans(start);
    int64_t end = RunOps(ops_, start);
    // The results are in place: the proxy may report the channels' ends once the GPU clock
    // reaches `end` (when the stream's later work may start).
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans[i].proxied) profs[i]->comm->KernelEnded(profs[i], end, !plans[i].comm->aborted());
    }
    lock.lock();
    last_end_ns_ = end;
    arrived_ = 0;
    latest_start_ns_ = 0;
    ++generation_;
    cv_.notify_all();
    return end;
  }

  // The plans as this run of the kernel reports them: a replayed plan's task events first (on
  // the stream's thread, standing in for CUDA's host-function thread), then every plan's start.
  std::vector<std::shared_ptr<ProfPlan>> StartPlans(int64_t start_ns) {
    std::vector<std::shared_ptr<ProfPlan>> profs;
    for (const Plan& p : plans) {
      profs.push_back(p.replayed ? ProfReplayCopy(*p.prof) : p.prof);
      if (p.replayed) ProfPlanTask(profs.back(), true);
      if (p.proxied) profs.back()->comm->KernelStarted(profs.back(), start_ns);
    }
    return profs;
  }

  // Not every stream got its task: those that did return without communicating.
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  const std::vector<Op> ops_;
  const int expected_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t latest_start_ns_ = 0;
  uint64_t generation_ = 0;
  int64_t last_end_ns_ = 0;
  bool cancelled_ = false;
};

struct StreamTask {
  std::shared_ptr<GroupLaunch> launch;
};

int64_t RunStreamTask(void* ctx, int64_t start_ns) {
  return static_cast<StreamTask*>(ctx)->launch->Run(start_ns);
}

void ReleaseStreamTask(void* ctx) { delete static_cast<StreamTask*>(ctx); }

}  // namespace

const OpSpec& SpecOf(OpKind kind) { return kSpecs[static_cast<size_t>(kind)]; }

namespace {

ncclResult_t EnqueueAll(const std::shared_ptr<GroupLaunch>& launch,
                        const std::vector<cudaStream_t>& streams, const char* name,
                        std::string* error) {
  for (cudaStream_t stream : streams) {
    auto* task = new StreamTask{launch};
    cudaError_t err = Runtime().enqueue_task(stream, name, RunStreamTask, ReleaseStreamTask, task);
    if (err != cudaSuccess) {
      launch->Cancel();
      *error = std::string(name) + ": enqueueing on stream failed with CUDA error " +
               std::to_string(err);
      return ncclUnhandledCudaError;
    }
  }
  return ncclSuccess;
}

// One plan per communicator whose operations have profiled tasks, in the order of first use.
std::vector<GroupLaunch::Plan> ProfPlans(std::vector<Op>& ops) {
  std::vector<GroupLaunch::Plan> plans;
  for (Op& op : ops) {
    ProfilerComm* pc = op.comm->profiler();
    if (pc == nullptr || op.prof.empty()) continue;
    auto it = std::find_if(plans.begin(), plans.end(),
                           [&](const GroupLaunch::Plan& p) { return p.comm == op.comm.get(); });
    if (it == plans.end()) {
      auto prof = std::make_shared<ProfPlan>();
      prof->comm = pc;
      it = plans.insert(plans.end(),
                        GroupLaunch::Plan{prof, op.comm.get(), op.stream, false, false});
    }
    for (ProfTask& t : op.prof) it->prof->tasks.push_back(t);
  }
  return plans;
}

}  // namespace

ncclResult_t Launch(std::vector<Op> ops, std::string* error) {
  if (ops.empty()) return ncclSuccess;
  ChargeCall(CallCost::kLaunch);  // the group's kernel launch (call_cost.h)
  std::vector<cudaStream_t> streams;
  for (const Op& op : ops) {
    if (std::find(streams.begin(), streams.end(), op.stream) == streams.end()) {
      streams.push_back(op.stream);
    }
  }
  // The name the runtime shows for the task: the operation, or "ncclGroup" for a mix.
  const char* name = SpecOf(ops.front().kind).name;
  for (const Op& op : ops) {
    if (op.kind != ops.front().kind) name = "ncclGroup";
  }
  std::vector<GroupLaunch::Plan> plans = ProfPlans(ops);
  const bool captured = !plans.empty() && StreamCapturing(streams.front());
  for (GroupLaunch::Plan& p : plans) {
    p.proxied = ProfNeedsProxy(*p.prof);
    p.replayed = captured && p.proxied;
  }
  auto launch = std::make_shared<GroupLaunch>(std::move(ops), static_cast<int>(streams.size()));
  launch->plans = plans;
  if (plans.empty()) return EnqueueAll(launch, streams, name, error);
  // NCCL 2.28.9 src/group.cc doLaunches, per communicator: ncclLaunchKernel (the KernelLaunch
  // event around the launch; gpusim enqueues the whole group inside the first one), then
  // ncclLaunchKernelAfter_NoCuda -> hostStreamPlanTask.
  for (size_t i = 0; i < plans.size(); ++i) {
    ProfKernelLaunchStart(*plans[i].prof, plans[i].stream);
    ncclResult_t r = i == 0 ? EnqueueAll(launch, streams, name, error) : ncclSuccess;
    ProfKernelLaunchStop(*plans[i].prof);
    if (r != ncclSuccess) return r;
    if (!plans[i].replayed) ProfPlanTask(plans[i].prof, captured);
  }
  return ncclSuccess;
}

double EstimateMicroseconds(const std::vector<Op>& ops) {
  int64_t longest = 0;
  const int64_t now = NowNs();
  for (const Chain& chain : BuildChains(ops)) {
    int64_t total = 0;
    for (const auto& phase : chain.phases) {
      int64_t phase_ns = 0;
      for (const Op* op : phase) phase_ns = std::max(phase_ns, OpDurationNs(*op, OpBytes(*op), now));
      total += phase_ns;
    }
    longest = std::max(longest, total);
  }
  return static_cast<double>(longest) / 1e3;
}

}  // namespace nccl
}  // namespace xtsim

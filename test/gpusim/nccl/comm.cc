#include "test/gpusim/nccl/comm.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <tuple>

#include "test/gpusim/common/sim_env.h"
#include "test/gpusim/nccl/backoff.h"

namespace xtsim {
namespace nccl {
namespace {

constexpr char kIdMagic[8] = {'x', 't', 's', 'i', 'm', 'N', 'C', '1'};

// The order in which this process created communicators (XTIMER_SIM_HANG's optional C).
std::atomic<int> g_created{0};

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// FNV-1a over bytes, finished with SplitMix64 (FNV alone mixes its last bytes poorly).
class Hasher {
 public:
  explicit Hasher(uint64_t seed) : h_(0xcbf29ce484222325ull ^ SplitMix64(seed)) {}
  void Add(const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < len; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  template <typename T>
  void AddValue(T v) {
    Add(&v, sizeof(v));
  }
  uint64_t Finish() const { return SplitMix64(h_); }

 private:
  uint64_t h_;
};

}  // namespace

CommKey RandomKey() {
  CommKey key;
  size_t got = 0;
  while (got < sizeof(key.bytes)) {
    ssize_t n = getrandom(key.bytes + got, sizeof(key.bytes) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      // No entropy source: time and pid still make collisions between live runs unlikely.
      Hasher h(static_cast<uint64_t>(NowNs()));
      h.AddValue(getpid());
      uint64_t a = h.Finish(), b = SplitMix64(a ^ static_cast<uint64_t>(NowNs()));
      memcpy(key.bytes, &a, 8);
      memcpy(key.bytes + 8, &b, 8);
      break;
    }
  }
  return key;
}

ncclUniqueId EncodeUniqueId(const CommKey& key) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, kIdMagic, sizeof(kIdMagic));
  memcpy(id.internal + sizeof(kIdMagic), key.bytes, sizeof(key.bytes));
  int32_t pid = static_cast<int32_t>(getpid());  // informational only
  memcpy(id.internal + sizeof(kIdMagic) + sizeof(key.bytes), &pid, sizeof(pid));
  return id;
}

bool DecodeUniqueId(const ncclUniqueId& id, CommKey* key) {
  if (memcmp(id.internal, kIdMagic, sizeof(kIdMagic)) != 0) return false;
  memcpy(key->bytes, id.internal + sizeof(kIdMagic), sizeof(key->bytes));
  return true;
}

CommKey DeriveKey(const CommKey& parent, const char* tag, uint64_t counter,
                  const std::vector<int64_t>& values) {
  CommKey key;
  for (uint64_t half = 0; half < 2; ++half) {
    Hasher h(half);
    h.Add(parent.bytes, sizeof(parent.bytes));
    h.Add(tag, strlen(tag) + 1);
    h.AddValue(counter);
    h.AddValue(static_cast<uint64_t>(values.size()));
    for (int64_t v : values) h.AddValue(v);
    uint64_t out = h.Finish();
    memcpy(key.bytes + 8 * half, &out, 8);
  }
  return key;
}

Comm::Comm(const CommOptions& options, int global_rank, bool counts_as_communicator)
    : options_(options),
      global_rank_(global_rank),
      creation_index_(counts_as_communicator ? g_created.fetch_add(1) : -1) {}

Comm::~Comm() {
  // Abandoned before everybody joined: the name would otherwise stay until the last rank joins,
  // which may never happen. Ranks already attached keep their mapping.
  if (segment_ != nullptr && state_ != State::kReady) segment_->Unlink();
}

std::shared_ptr<Comm> Comm::CreateRoot(const CommKey& key, int nranks, int rank,
                                       const CommOptions& options) {
  int global = SimRank() >= 0 ? SimRank() : rank;
  std::shared_ptr<Comm> c(new Comm(options, global, true));
  std::lock_guard<std::mutex> lock(c->mu_);
  c->key_ = key;
  c->nranks_ = nranks;
  c->rank_ = rank;
  c->Attach();
  return c;
}

std::shared_ptr<Comm> Comm::CreateSplitChild(Comm& parent, int color, int key,
                                             const CommOptions& options) {
  std::shared_ptr<Comm> c(new Comm(options, parent.global_rank(), true));
  std::lock_guard<std::mutex> lock(c->mu_);
  c->PublishSplit(parent, color, key);
  return c;
}

std::shared_ptr<Comm> Comm::CreateSplitBystander(Comm& parent) {
  std::shared_ptr<Comm> c(new Comm(parent.options_, parent.global_rank(), false));
  std::lock_guard<std::mutex> lock(c->mu_);
  c->bystander_ = true;
  c->PublishSplit(parent, NCCL_SPLIT_NOCOLOR, 0);
  return c;
}

std::shared_ptr<Comm> Comm::CreateShrinkChild(Comm& parent, const std::vector<int>& exclude,
                                              const CommOptions& options) {
  std::shared_ptr<Comm> c(new Comm(options, parent.global_rank(), true));
  std::lock_guard<std::mutex> lock(c->mu_);
  // Only survivors call ncclCommShrink, so nothing can be exchanged through the parent: every
  // survivor derives the same id and the same new ranks from what they all know.
  std::vector<int64_t> values(exclude.begin(), exclude.end());
  c->key_ = DeriveKey(parent.key(), "shrink", parent.NextShrink(), values);
  c->nranks_ = parent.nranks() - static_cast<int>(exclude.size());
  auto below = std::lower_bound(exclude.begin(), exclude.end(), parent.rank()) - exclude.begin();
  c->rank_ = parent.rank() - static_cast<int>(below);
  c->Attach();
  return c;
}

// Writes (color, key) into this rank's next exchange slot of the parent. A slot is reused every
// kCtrlSlots exchanges, once every rank has read the old contents; waiting for that only happens
// when a rank runs kCtrlSlots splits ahead of a peer.
void Comm::PublishSplit(Comm& parent, int color, int key) {
  parent_ = parent.shared_from_this();
  state_ = State::kExchanging;
  std::lock_guard<std::mutex> lock(parent.split_mu_);
  exchange_ = parent.splits_published_++;
  Segment& seg = parent.segment();
  if (exchange_ >= static_cast<uint64_t>(kCtrlSlots)) {
    uint64_t needed = exchange_ - kCtrlSlots + 1;
    Backoff backoff;
    for (int r = 0; r < parent.nranks(); ++r) {
      while (seg.rank(r)->ctrl_consumed.load(std::memory_order_acquire) < needed) backoff.Pause();
    }
  }
  ShmCtrl& slot = seg.rank(parent.rank())->ctrl[exchange_ % kCtrlSlots];
  slot.color.store(color, std::memory_order_relaxed);
  slot.key.store(key, std::memory_order_relaxed);
  slot.seq.store(exchange_ + 1, std::memory_order_release);
}

ncclResult_t Comm::Fail(const std::string& message, ncclResult_t code) {
  state_ = State::kFailed;
  result_ = code;
  error_ = message;
  parent_.reset();
  return code;
}

ncclResult_t Comm::Attach() {
  std::string err;
  segment_ = Segment::Open(SegmentName(key_.bytes), nranks_, &err);
  if (segment_ == nullptr) return Fail(err, ncclSystemError);
  ShmRank* me = segment_->rank(rank_);
  uint32_t expected = 0;
  if (!me->claimed.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    segment_.reset();
    return Fail("rank " + std::to_string(rank_) + " joined the communicator twice",
                ncclInvalidUsage);
  }
  me->pid = static_cast<int32_t>(getpid());
  me->pidns = PidNamespace();
  me->global_rank = global_rank_;
  me->node = SimNode();
  me->cuda_dev = options_.cuda_dev;
  me->present.store(1, std::memory_order_release);
  uint32_t joined = segment_->header()->joined.fetch_add(1, std::memory_order_acq_rel) + 1;
  // Everybody has mapped the segment: the name is no longer needed (see shm.h, Lifetime).
  if (joined == static_cast<uint32_t>(nranks_)) segment_->Unlink();
  state_ = State::kJoining;
  return ncclInProgress;
}

ncclResult_t Comm::AdvanceExchange() {
  Comm& parent = *parent_;
  Segment& seg = parent.segment();
  int n = parent.nranks();
  std::vector<std::tuple<int64_t, int64_t>> pairs(static_cast<size_t>(n));  // (color, key)
  {
    std::lock_guard<std::mutex> lock(parent.split_mu_);
    // Exchanges are read in order: a later split waits for the earlier ones of this rank.
    if (parent.splits_read_ != exchange_) return ncclInProgress;
    for (int r = 0; r < n; ++r) {
      const ShmCtrl& slot = seg.rank(r)->ctrl[exchange_ % kCtrlSlots];
      if (slot.seq.load(std::memory_order_acquire) != exchange_ + 1) return ncclInProgress;
    }
    for (int r = 0; r < n; ++r) {
      const ShmCtrl& slot = seg.rank(r)->ctrl[exchange_ % kCtrlSlots];
      pairs[static_cast<size_t>(r)] = {slot.color.load(std::memory_order_relaxed),
                                       slot.key.load(std::memory_order_relaxed)};
    }
    ++parent.splits_read_;
    seg.rank(parent.rank())->ctrl_consumed.store(parent.splits_read_, std::memory_order_release);
  }
  if (bystander_) {
    parent_.reset();
    state_ = State::kReady;
    result_ = ncclSuccess;
    return ncclSuccess;
  }
  // The child: ranks of my color, ordered by key, then by parent rank.
  int64_t color = std::get<0>(pairs[static_cast<size_t>(parent.rank())]);
  std::vector<int> members;
  for (int r = 0; r < n; ++r) {
    if (std::get<0>(pairs[static_cast<size_t>(r)]) == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return std::get<1>(pairs[static_cast<size_t>(a)]) < std::get<1>(pairs[static_cast<size_t>(b)]);
  });
  nranks_ = static_cast<int>(members.size());
  rank_ =
      static_cast<int>(std::find(members.begin(), members.end(), parent.rank()) - members.begin());
  key_ = DeriveKey(parent.key(), "split", exchange_, {color});
  parent_.reset();
  return Attach();
}

ncclResult_t Comm::AdvanceJoin() {
  ShmHeader* h = segment_->header();
  if (h->joined.load(std::memory_order_acquire) < static_cast<uint32_t>(nranks_)) {
    return ncclInProgress;
  }
  std::vector<int> nodes, globals;
  for (int r = 0; r < nranks_; ++r) {
    const ShmRank* peer = segment_->rank(r);
    // `joined` counts attachments; the fields are valid once `present` is.
    if (peer->present.load(std::memory_order_acquire) == 0) return ncclInProgress;
  }
  for (int r = 0; r < nranks_; ++r) {
    const ShmRank* peer = segment_->rank(r);
    nodes.push_back(peer->node);
    globals.push_back(peer->global_rank);
    member_pids_.push_back(peer->pid);
    member_pidns_.push_back(peer->pidns);
  }
  link_ = LinkFor(nodes, globals);
  InitProfiler(nodes);
  for (int r = 0; r < nranks_; ++r) {
    size_t i = static_cast<size_t>(r), me = static_cast<size_t>(rank_);
    peer_links_.push_back(LinkFor({nodes[me], nodes[i]}, {globals[me], globals[i]}));
  }
  size_t n = static_cast<size_t>(nranks_);
  engine.sends_started.assign(n, 0);
  engine.sends_done.assign(n, 0);
  engine.recvs_started.assign(n, 0);
  engine.recvs_done.assign(n, 0);
  state_ = State::kReady;
  result_ = ncclSuccess;
  Debug("nccl: rank %d of %d ready (global rank %d, communicator #%d, %s)", rank_, nranks_,
        global_rank_, creation_index_, segment_->name().c_str());
  return ncclSuccess;
}

// NCCL 2.28.9 src/init.cc initTransportsRank -> ncclProfilerPluginInit, once per communicator
// during its initialisation. commId: NCCL's commHash, a hash of the unique id for a root
// communicator and of (parent hash, split count, color) for a child; ours is a hash of the key,
// which is derived the same way (the unique id's random bytes, or DeriveKey).
void Comm::InitProfiler(const std::vector<int>& nodes) {
  Hasher h(0x70726f66);  // "prof"
  h.Add(key_.bytes, sizeof(key_.bytes));
  std::vector<int> distinct(nodes);
  std::sort(distinct.begin(), distinct.end());
  int nnodes = static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  profiler_ = ProfilerComm::Init(h.Finish(), options_.has_name ? options_.name.c_str() : nullptr,
                                 nnodes, nranks_, rank_);
  profiler_raw_.store(profiler_.get(), std::memory_order_release);
}

void Comm::FinalizeProfiler() {
  ProfilerComm* p = profiler();
  if (p != nullptr) p->Finalize();
}

ncclResult_t Comm::TryAdvance() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kExchanging) {
    ncclResult_t r = AdvanceExchange();
    if (r != ncclInProgress || state_ != State::kJoining) return r;
  }
  if (state_ == State::kJoining) return AdvanceJoin();
  return result_;
}

ncclResult_t Comm::Wait() {
  Backoff backoff;
  for (;;) {
    ncclResult_t r = TryAdvance();
    if (r != ncclInProgress) return r;
    if (aborted()) return ncclInvalidUsage;
    backoff.Pause();
  }
}

Comm::State Comm::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

std::string Comm::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void Comm::SetAsyncError(ncclResult_t error) {
  ncclResult_t expected = ncclSuccess;
  async_error_.compare_exchange_strong(expected, error, std::memory_order_acq_rel);
}

void Comm::CheckPeersAlive() {
  if (dead_peer_reported_.load(std::memory_order_relaxed)) return;
  for (int r = 0; r < nranks_; ++r) {
    int pid = member_pids_[static_cast<size_t>(r)];
    if (!ProcessGone(pid, member_pidns_[static_cast<size_t>(r)])) continue;
    if (dead_peer_reported_.exchange(true)) return;
    // What the real NCCL's proxy reports when a peer's connection drops. Operations still wait,
    // as kernels spinning on a GPU would, until the application aborts the communicator.
    SetAsyncError(ncclRemoteError);
    Warn(
        "nccl: rank %d (pid %d) of communicator #%d exited; rank %d's operations on it cannot "
        "complete (ncclCommGetAsyncError reports ncclRemoteError)",
        r, pid, creation_index_, rank_);
    return;
  }
}

ncclRedOp_t Comm::AddPreMulSum(const PreMulSum& op) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < premulsums_.size() && premulsums_[i].datatype != ncclNumTypes) ++i;
  if (i == premulsums_.size()) {
    premulsums_.push_back(op);
  } else {
    premulsums_[i] = op;
  }
  return static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(i));
}

bool Comm::FindPreMulSum(ncclRedOp_t op, PreMulSum* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  long i = static_cast<long>(op) - ncclNumOps;
  if (i < 0 || static_cast<size_t>(i) >= premulsums_.size()) return false;
  if (premulsums_[static_cast<size_t>(i)].datatype == ncclNumTypes) return false;
  *out = premulsums_[static_cast<size_t>(i)];
  return true;
}

bool Comm::RemovePreMulSum(ncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(mu_);
  long i = static_cast<long>(op) - ncclNumOps;
  if (i < 0 || static_cast<size_t>(i) >= premulsums_.size()) return false;
  if (premulsums_[static_cast<size_t>(i)].datatype == ncclNumTypes) return false;
  premulsums_[static_cast<size_t>(i)].datatype = ncclNumTypes;
  return true;
}

ncclWindow_vidmem* Comm::AddRegistration(void* buff, size_t size, int flags, bool window) {
  auto reg = std::make_unique<ncclWindow_vidmem>(ncclWindow_vidmem{buff, size, flags, window});
  ncclWindow_vidmem* handle = reg.get();
  std::lock_guard<std::mutex> lock(mu_);
  registrations_[handle] = std::move(reg);
  return handle;
}

bool Comm::RemoveRegistration(void* handle, bool window) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = registrations_.find(handle);
  if (it == registrations_.end() || it->second->window != window) return false;
  registrations_.erase(it);
  return true;
}

}  // namespace nccl
}  // namespace xtsim

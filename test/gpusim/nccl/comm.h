// A communicator of the simulated NCCL: one rank's view of a group of ranks that meet in a
// shared-memory segment (shm.h).
//
// Creation is collective and may be non-blocking, so it is a small state machine advanced by
// TryAdvance() (never blocks) and Wait() (blocks):
//
//   kExchanging  ncclCommSplit only: (color, key) published through the parent, waiting for
//                every parent rank's pair; then the child's size, rank and id are known.
//   kJoining     attached to the segment, waiting for all nranks to attach.
//   kReady       usable.  kFailed: creation failed (error() says why).
//
// Ranks are threads or processes; they find each other only through the segment, so a rank in
// one process never touches another rank's Comm object.
#ifndef XTIMER_TEST_GPUSIM_NCCL_COMM_H_
#define XTIMER_TEST_GPUSIM_NCCL_COMM_H_

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "test/gpusim/nccl/datatypes.h"
#include "test/gpusim/nccl/model.h"
#include "test/gpusim/nccl/profiler_plugin.h"
#include "test/gpusim/nccl/shm.h"

// A registered buffer or window. nccl.h names only the window type; buffer handles are the same
// record behind a void*.
struct ncclWindow_vidmem {
  void* buff;
  size_t size;
  int flags;
  bool window;
};

namespace xtsim {
namespace nccl {

// The 16 random bytes that identify a communicator (and name its segment).
struct CommKey {
  uint8_t bytes[16];
};

// A fresh random key, and its encoding in an ncclUniqueId (with a recognisable magic).
CommKey RandomKey();
ncclUniqueId EncodeUniqueId(const CommKey& key);
// False when `id` was not made by ncclGetUniqueId of this library.
bool DecodeUniqueId(const ncclUniqueId& id, CommKey* key);
// A child key that every rank derives alike: hash of the parent key, a tag, a counter and values.
CommKey DeriveKey(const CommKey& parent, const char* tag, uint64_t counter,
                  const std::vector<int64_t>& values);

// A dynamic reduction operator (ncclRedOpCreatePreMulSum).
struct PreMulSum {
  ncclDataType_t datatype;
  bool on_device;                   // ncclScalarDevice: read `device_scalar` when the op runs
  uint8_t scalar[kMaxElementSize];  // ncclScalarHostImmediate: the value, copied at creation
  const void* device_scalar;
};

struct CommOptions {
  bool blocking = true;
  int cuda_dev = 0;
  bool has_name = false;  // ncclConfig_t::commName was given
  std::string name;
};

class Comm : public std::enable_shared_from_this<Comm> {
 public:
  enum class State { kExchanging, kJoining, kReady, kFailed };

  // ncclCommInitRank*: attaches at once. The global rank is SimRank(), or `rank` when the process
  // has no rank of its own (ranks that are threads).
  static std::shared_ptr<Comm> CreateRoot(const CommKey& key, int nranks, int rank,
                                          const CommOptions& options);
  // ncclCommSplit with a color other than NCCL_SPLIT_NOCOLOR: publishes (color, key) through the
  // parent. `parent` must be ready.
  static std::shared_ptr<Comm> CreateSplitChild(Comm& parent, int color, int key,
                                                const CommOptions& options);
  // ncclCommSplit with NCCL_SPLIT_NOCOLOR: the parent still takes part in the exchange; the
  // returned object only completes it (it never becomes a communicator of its own).
  static std::shared_ptr<Comm> CreateSplitBystander(Comm& parent);
  // ncclCommShrink: `exclude` is sorted, unique, valid and does not hold parent.rank().
  static std::shared_ptr<Comm> CreateShrinkChild(Comm& parent, const std::vector<int>& exclude,
                                                 const CommOptions& options);

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Advances creation as far as possible without blocking: ncclSuccess when ready,
  // ncclInProgress while waiting for other ranks, or the creation error.
  ncclResult_t TryAdvance();
  // Blocks until ready or failed.
  ncclResult_t Wait();
  State state() const;
  std::string error() const;  // why creation failed (once kFailed)
  bool is_bystander() const { return bystander_; }

  // Identity. rank() and nranks() are valid from kJoining on.
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int cuda_dev() const { return options_.cuda_dev; }
  bool blocking() const { return options_.blocking; }
  int global_rank() const { return global_rank_; }
  int creation_index() const { return creation_index_; }
  const CommKey& key() const { return key_; }

  // Valid once ready.
  Segment& segment() const { return *segment_; }
  const Link& link() const { return link_; }  // collectives
  const Link& peer_link(int peer) const { return peer_links_[static_cast<size_t>(peer)]; }

  // Asynchronous error (ncclCommGetAsyncError). Set keeps the first error.
  ncclResult_t async_error() const { return async_error_.load(std::memory_order_acquire); }
  void SetAsyncError(ncclResult_t error);
  // Aborted (ncclCommAbort / ncclCommRevoke / NCCL_SHRINK_ABORT): operations waiting for peers give
  // up; new operations are refused.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  void Abort() { aborted_.store(true, std::memory_order_release); }
  std::atomic<bool> revoked{false};

  // Host-side counters (fault knobs, derived ids).
  int64_t NextCollectiveCall() { return coll_calls_.fetch_add(1) + 1; }
  uint64_t NextShrink() { return shrinks_.fetch_add(1); }

  // Dynamic reduction operators of this rank.
  ncclRedOp_t AddPreMulSum(const PreMulSum& op);
  bool FindPreMulSum(ncclRedOp_t op, PreMulSum* out) const;
  bool RemovePreMulSum(ncclRedOp_t op);

  // Buffer registrations (ncclCommRegister) and windows (ncclCommWindowRegister), owned here so
  // that deregistration can be validated and destruction frees what the user forgot.
  ncclWindow_vidmem* AddRegistration(void* buff, size_t size, int flags, bool window);
  bool RemoveRegistration(void* handle, bool window);

  // State of the stream-side engine (ops.cc), guarded by run_mu. Every rank performs the same
  // sequence of collectives and barriers, so these counters agree across ranks.
  struct Engine {
    uint64_t collectives = 0;  // collective sequence number (arrival slot parity)
    uint64_t barriers = 0;     // arrivals at ShmHeader::data_barrier
    uint64_t rounds = 0;       // staging rounds (double-buffer parity)
    std::vector<uint64_t> sends_started, sends_done, recvs_started, recvs_done;  // per peer
  };
  std::mutex run_mu;
  Engine engine;

  // Called by tasks while they wait: notices peers whose process has exited.
  void CheckPeersAlive();

  // The profiler plugin's state for this communicator (profiler_plugin.h), made when it becomes
  // ready; nullptr without a plugin. FinalizeProfiler: ncclCommDestroy / ncclCommAbort.
  ProfilerComm* profiler() const { return profiler_raw_.load(std::memory_order_acquire); }
  void FinalizeProfiler();

 private:
  Comm(const CommOptions& options, int global_rank, bool counts_as_communicator);
  ncclResult_t Fail(const std::string& message, ncclResult_t code);
  ncclResult_t Attach();           // kJoining from a known key, nranks and rank
  ncclResult_t AdvanceExchange();  // kExchanging -> kJoining
  ncclResult_t AdvanceJoin();      // kJoining -> kReady
  void PublishSplit(Comm& parent, int color, int key);
  void InitProfiler(const std::vector<int>& nodes);  // mu_ held

  const CommOptions options_;
  const int global_rank_;
  const int creation_index_;
  CommKey key_{};
  int rank_ = -1;
  int nranks_ = 0;
  bool bystander_ = false;

  mutable std::mutex mu_;  // creation state, operators, registrations
  State state_ = State::kJoining;
  ncclResult_t result_ = ncclInProgress;
  std::string error_;
  // kExchanging: the parent and our exchange number on it (also the split counter).
  std::shared_ptr<Comm> parent_;
  uint64_t exchange_ = 0;

  std::shared_ptr<Segment> segment_;
  Link link_{};
  std::vector<Link> peer_links_;
  std::vector<int> member_pids_;
  std::vector<uint64_t> member_pidns_;

  std::shared_ptr<ProfilerComm> profiler_;
  std::atomic<ProfilerComm*> profiler_raw_{nullptr};

  std::atomic<ncclResult_t> async_error_{ncclSuccess};
  std::atomic<bool> aborted_{false};
  std::atomic<int64_t> coll_calls_{0};
  std::atomic<uint64_t> shrinks_{0};
  std::atomic<bool> dead_peer_reported_{false};

  // As a parent: split exchanges published and read by this rank.
  std::mutex split_mu_;
  uint64_t splits_published_ = 0;
  uint64_t splits_read_ = 0;

  std::vector<PreMulSum> premulsums_;  // index = op - ncclNumOps; datatype ncclNumTypes = free
  std::unordered_map<void*, std::unique_ptr<ncclWindow_vidmem>> registrations_;
};

}  // namespace nccl
}  // namespace xtsim

// The public handle behind ncclComm_t. Tasks hold the implementation, not the handle, so that
// ncclCommDestroy never frees memory a queued or captured operation still uses.
struct ncclComm {
  static constexpr uint64_t kMagic = 0x6d6d6f436c63636eull;  // "ncclComm"
  uint64_t magic = kMagic;
  std::shared_ptr<xtsim::nccl::Comm> impl;
};

#endif  // XTIMER_TEST_GPUSIM_NCCL_COMM_H_

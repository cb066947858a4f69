#include "hook/nccl_handlers.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <new>

#include "hook/comm_registry.h"

namespace xtimer {
namespace hook {

constexpr int kMaxGroupMembers = 256;
constexpr int kMaxGroupStreams = 32;

struct GroupMember {
  OpDesc d;
  int64_t cpu_launch_ns;
};

// Plain data (zero-initialised __thread: no TLS init wrapper on the hot path). Like every
// thread-local of the hook: initial-exec, hidden, external linkage (exports_test checks it). An
// internal-linkage one beside others once made ld (binutils 2.40) shift their relocations.
struct GroupState {
  int depth;
  int count;
  GroupMember* members;  // kMaxGroupMembers, allocated by the first group (cold)
};
__thread GroupState t_group
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace {

inline bool Ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

}  // namespace

CommEntry* LookupComm(const void* comm) {
  if (comm == nullptr) return nullptr;
  CommEntry* e = Comms().Lookup(comm);
  if (e != nullptr && !e->resolved.load(std::memory_order_acquire)) ResolveComm(comm, e, -1, -1);
  return e;
}

bool InGroup() { return t_group.depth > 0; }

void AssignSeq(OpDesc* d) {
  d->seq = d->kind == format::OpKind::kP2P ? d->comm->NextP2PSeq(d->peer)
                                           : d->comm->NextCollectiveSeq();
}

uint64_t UpcomingSeq(const OpDesc& d) {
  return d.kind == format::OpKind::kP2P ? d.comm->UpcomingP2PSeq(d.peer)
                                        : d.comm->UpcomingCollectiveSeq();
}

namespace {

pthread_key_t g_members_key;

void FreeMembers(void* members) { delete[] static_cast<GroupMember*>(members); }

GroupMember* AllocateMembers() {  // cold: a thread's first group
  static std::once_flag once;
  std::call_once(once, [] { pthread_key_create(&g_members_key, &FreeMembers); });
  auto* members = new GroupMember[kMaxGroupMembers];
  pthread_setspecific(g_members_key, members);  // freed when the thread exits
  return members;
}

}  // namespace

void AddGroupMember(const OpDesc& d) {
  GroupState& g = t_group;
  if (g.members == nullptr) g.members = AllocateMembers();
  if (g.count >= kMaxGroupMembers) return;  // sequence numbered, not timed
  g.members[g.count].d = d;
  g.members[g.count].cpu_launch_ns = RealtimeNs();
  ++g.count;
}

ncclResult_t OnGroupStart(decltype(&::ncclGroupStart) real) {
  if (!Enter()) return real();
  HookScope scope;
  ncclResult_t r = real();
  if (Ok(r)) ++t_group.depth;
  return r;
}

ncclResult_t OnGroupEnd(decltype(&::ncclGroupEnd) real) {
  if (!Enter()) return real();
  HookScope scope;
  GroupState& g = t_group;
  if (g.depth != 1) {  // inner end (or unbalanced): NCCL launches nothing yet
    ncclResult_t r = real();
    if (g.depth > 0) --g.depth;
    return r;
  }
  int saved = errno;
  // One event pair per stream involved, around the real GroupEnd. Only the leads in use are
  // constructed (a Timing's initialisers for all kMaxGroupStreams cost more than the rest).
  struct Lead {
    cudaStream_t stream;
    int first;
    Timing t;
    bool timed;
    bool tracked;  // untimed by the budget: a completion mark after the group
  };
  union LeadSlot {
    LeadSlot() {}
    Lead lead;
  };
  LeadSlot slots[kMaxGroupStreams];
  auto lead = [&slots](int l) -> Lead& { return slots[l].lead; };
  int n_leads = 0;
  int8_t lead_of[kMaxGroupMembers];
  for (int i = 0; i < g.count; ++i) {
    int l = 0;
    while (l < n_leads && lead(l).stream != g.members[i].d.stream) ++l;
    if (l == n_leads && n_leads < kMaxGroupStreams) {
      new (&slots[n_leads].lead) Lead{g.members[i].d.stream, i, Timing(), false, false};
      ++n_leads;
    }
    lead_of[i] = static_cast<int8_t>(l < n_leads ? l : -1);
  }
  // The group is timed or not as a whole, by its first member's sequence number.
  const bool time_group = g.count > 0 && budget::DecideCollective(g.members[0].d.seq);
  for (int l = 0; l < n_leads; ++l) {
    OwnTimer own;  // a collective's cost is the budget's fixed cost, timed or not
    own.set_timed(false);
    bool capturing;
    if (CanTime(lead(l).stream, &capturing)) {
      if (time_group) lead(l).timed = BeginTimed(g.members[lead(l).first].d, &lead(l).t);
      lead(l).tracked = !lead(l).timed;
    }
  }
  errno = saved;
  ncclResult_t r = real();
  saved = errno;
  g.depth = 0;
  uint32_t group_id = g.count > 0 ? NextGroupId() : 0;
  for (int l = 0; l < n_leads; ++l) {
    OwnTimer own;
    own.set_timed(false);
    lead(l).t.cpu_launch_ns = g.members[lead(l).first].cpu_launch_ns;
    if (lead(l).timed) EndTimed(g.members[lead(l).first].d, &lead(l).t, Ok(r), group_id);
    if (lead(l).tracked) {
      lead(l).tracked = Ok(r) && TrackCompletion(g.members[lead(l).first].d, &lead(l).t, group_id);
    }
  }
  if (Ok(r)) {
    for (int i = 0; i < g.count; ++i) {
      int l = lead_of[i];
      if (l < 0 || lead(l).first == i || !(lead(l).timed || lead(l).tracked)) continue;
      QueueFollower(g.members[i].d, lead(l).t.device, g.members[i].cpu_launch_ns, group_id,
                    lead(l).timed);
    }
  }
  g.count = 0;
  if (Comms().unresolved.load(std::memory_order_relaxed) > 0) ResolvePendingComms();
  errno = saved;
  return r;
}

namespace {

void RegisterRoot(ncclComm_t comm, uint64_t id, int rank, int nranks) {
  if (comm == nullptr) return;
  CommEntry* e = Comms().Insert(comm, id, 0, CommOrigin::kInit);
  ResolveComm(comm, e, rank, nranks);
}

}  // namespace

ncclResult_t OnCommInitRank(decltype(&::ncclCommInitRank) real, ncclComm_t* comm, int nranks,
                            ncclUniqueId id, int rank) {
  if (!Enter()) return real(comm, nranks, id, rank);
  HookScope scope;
  ncclResult_t r = real(comm, nranks, id, rank);
  ErrnoSaver saver;
  if (Ok(r) && comm != nullptr) {
    RegisterRoot(*comm, CommIdFromUniqueId(&id, sizeof(id)), rank, nranks);
  }
  return r;
}

ncclResult_t OnCommInitRankConfig(decltype(&::ncclCommInitRankConfig) real, ncclComm_t* comm,
                                  int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (!Enter()) return real(comm, nranks, id, rank, config);
  HookScope scope;
  ncclResult_t r = real(comm, nranks, id, rank, config);
  ErrnoSaver saver;
  if (Ok(r) && comm != nullptr) {
    RegisterRoot(*comm, CommIdFromUniqueId(&id, sizeof(id)), rank, nranks);
  }
  return r;
}

ncclResult_t OnCommInitRankScalable(decltype(&::ncclCommInitRankScalable) real,
                                    ncclComm_t* comm, int nranks, int rank, int n_ids,
                                    ncclUniqueId* ids, ncclConfig_t* config) {
  if (!Enter()) return real(comm, nranks, rank, n_ids, ids, config);
  HookScope scope;
  ncclResult_t r = real(comm, nranks, rank, n_ids, ids, config);
  ErrnoSaver saver;
  if (Ok(r) && comm != nullptr && n_ids > 0 && ids != nullptr) {
    RegisterRoot(*comm, CommIdFromUniqueId(&ids[0], sizeof(ids[0])), rank, nranks);
  }
  return r;
}

ncclResult_t OnCommInitAll(decltype(&::ncclCommInitAll) real, ncclComm_t* comms, int ndev,
                           const int* devlist) {
  if (!Enter()) return real(comms, ndev, devlist);
  HookScope scope;
  ncclResult_t r = real(comms, ndev, devlist);
  ErrnoSaver saver;
  if (Ok(r) && comms != nullptr) {
    uint64_t id = CommIdForInitAll(getpid(), NextInitAllCounter());
    for (int i = 0; i < ndev; ++i) RegisterRoot(comms[i], id, i, ndev);
  }
  return r;
}

ncclResult_t OnCommSplit(decltype(&::ncclCommSplit) real, ncclComm_t comm, int color, int key,
                         ncclComm_t* newcomm, ncclConfig_t* config) {
  if (!Enter()) return real(comm, color, key, newcomm, config);
  HookScope scope;
  CommEntry* parent = LookupComm(comm);
  // Every rank of the parent calls split in the same order, so the counters agree.
  uint64_t counter = parent != nullptr ? parent->split_counter.fetch_add(1) : 0;
  ncclResult_t r = real(comm, color, key, newcomm, config);
  ErrnoSaver saver;
  if (Ok(r) && parent != nullptr && newcomm != nullptr && *newcomm != nullptr) {
    CommEntry* e = Comms().Insert(*newcomm, CommIdForSplit(parent->id, counter, color),
                                  parent->id, CommOrigin::kSplit);
    if (!InGroup()) ResolveComm(*newcomm, e, -1, -1);
  }
  return r;
}

ncclResult_t OnCommShrink(decltype(&::ncclCommShrink) real, ncclComm_t comm, int* exclude,
                          int exclude_count, ncclComm_t* newcomm, ncclConfig_t* config,
                          int flags) {
  if (!Enter()) return real(comm, exclude, exclude_count, newcomm, config, flags);
  HookScope scope;
  CommEntry* parent = LookupComm(comm);
  uint64_t counter = parent != nullptr ? parent->shrink_counter.fetch_add(1) : 0;
  ncclResult_t r = real(comm, exclude, exclude_count, newcomm, config, flags);
  ErrnoSaver saver;
  if (Ok(r) && parent != nullptr && newcomm != nullptr && *newcomm != nullptr) {
    CommEntry* e = Comms().Insert(
        *newcomm, CommIdForShrink(parent->id, counter, exclude, exclude_count), parent->id,
        CommOrigin::kShrink);
    if (!InGroup()) ResolveComm(*newcomm, e, -1, -1);
  }
  return r;
}

ncclResult_t OnCommEnd(ncclResult_t (*real)(ncclComm_t), ncclComm_t comm) {
  if (!Enter()) return real(comm);
  HookScope scope;
  if (comm != nullptr) Comms().Remove(comm);
  return real(comm);
}

cudaError_t OnGetKernel(decltype(&::__cudaGetKernel) real, cudaKernel_t* kernel,
                        const void* function) {
  cudaError_t r = real(kernel, function);
  if (r == cudaSuccess && kernel != nullptr && !t_in_hook &&
      g_mode.load(std::memory_order_relaxed) != kOff) {
    // Not Enter(): the mapping needs no timing decision, only a started hook (the table lives in
    // the process state, so this hooked CUDA call may be what starts it). Calls the real
    // libraries make from inside one of our hooks (t_in_hook) are left alone.
    if (g_mode.load(std::memory_order_relaxed) == kUninit && !InitSlow()) return r;
    ErrnoSaver saver;
    Kernels().MapHandle(*kernel, function);
  }
  return r;
}

}  // namespace hook
}  // namespace xtimer

#include "timeline/synthetic_job.h"

#include <sys/stat.h>

#include <algorithm>
#include <random>

#include "format/record.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {
namespace {

using format::DType;
using format::Operation;
using format::OpKind;

constexpr uint64_t kWorldComm = 0xC0FFEE0000000001ull;
constexpr uint64_t kTpCommBase = 0x7000000000000000ull;

EventRecord Base(OpKind kind, Operation op, uint64_t stream) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(kind);
  e.op = static_cast<uint16_t>(op);
  e.stream = stream;
  e.peer = -1;
  e.root = -1;
  e.batch = 1;
  return e;
}

struct RankState {
  std::vector<EventRecord> events;
  std::vector<NvtxEntry> nvtx;
};

// The NVTX strings of a job with NVTX events (after the kernel names of the string table).
enum NvtxString : uint32_t {
  kTrainStep = 3,
  kForward = 4,
  kAllReduceWait = 5,
  kStepDone = 6,
  kDataLoader = 7,
};

NvtxEntry NvtxAt(format::NvtxEvent event, uint32_t tid, uint32_t name, int64_t start,
                 int64_t end, int32_t depth) {
  NvtxEntry e{};
  e.event = static_cast<uint8_t>(event);
  e.tid = tid;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.depth = depth;
  return e;
}

// One step's NVTX events of every rank, on its main thread: train_step (from the step's start to
// after its AllReduce; flagged a step) > forward (its compute) and all_reduce_wait (the AllReduce), a step_done
// mark, and, on its loader thread, a data_loader start/end range that runs into the next step.
void AddNvtx(int64_t t, const std::vector<int64_t>& ready, const std::vector<int64_t>& ag_end,
             int64_t ar_end, std::vector<RankState>* st) {
  using format::NvtxEvent;
  for (size_t r = 0; r < st->size(); ++r) {
    std::vector<NvtxEntry>& n = (*st)[r].nvtx;
    const uint32_t main = 5000 + static_cast<uint32_t>(r), loader = main + 100;
    n.push_back(NvtxAt(NvtxEvent::kRange, main, kForward, t + 500, ready[r], 1));
    n.push_back(NvtxAt(NvtxEvent::kRange, main, kAllReduceWait, ag_end[r], ar_end + 20000, 1));
    n.push_back(NvtxAt(NvtxEvent::kRange, main, kTrainStep, t, ar_end + 50000, 0));
    n.back().flags = format::kNvtxStep;  // as the hook flags a range named XTIMER_STEP_RANGE
    n.push_back(NvtxAt(NvtxEvent::kMark, main, kStepDone, ar_end + 30000, ar_end + 30000, 0));
    const uint64_t id = static_cast<uint64_t>(t);
    NvtxEntry start = NvtxAt(NvtxEvent::kStart, loader, kDataLoader, t + 200, 0, 0);
    NvtxEntry end = NvtxAt(NvtxEvent::kEnd, loader, 0, 0, ar_end + 300000, 0);
    start.range_id = end.range_id = id;
    n.push_back(start);
    n.push_back(end);
  }
}

// Rank r sends 16 MiB to rank r + per_node 20 us after the AllReduce ends; the receive ends 2 us
// after the send and begins 10 us before it on odd steps, 5 us after it on even ones.
void AddPipelineSends(int step, int per_node, int64_t ar_end, std::mt19937_64* rng,
                      std::vector<RankState>* st) {
  const int ranks = static_cast<int>(st->size());
  for (int r = 0; r + per_node < ranks; ++r) {
    const int to = r + per_node;
    const uint64_t stream = 0x7f0000004000ull + (r % per_node) * 0x100;
    EventRecord s = Base(OpKind::kP2P, Operation::kSend, stream);
    s.dtype = static_cast<uint8_t>(DType::kBF16);
    s.comm_id = kWorldComm;
    s.seq = step;
    s.peer = to;
    s.bytes = 16u << 20;
    s.gpu_start_ns = ar_end + 20000 + static_cast<int64_t>((*rng)() % 1000);
    s.cpu_launch_ns = s.gpu_start_ns - 5000;
    s.duration_ns = 30000;
    EventRecord v = s;
    v.op = static_cast<uint16_t>(Operation::kRecv);
    v.peer = r;
    v.gpu_start_ns = s.gpu_start_ns + (step % 2 == 1 ? -10000 : 5000);
    v.cpu_launch_ns = v.gpu_start_ns - 5000;
    v.duration_ns = s.gpu_start_ns + s.duration_ns + 2000 - v.gpu_start_ns;
    (*st)[r].events.push_back(s);
    (*st)[to].events.push_back(v);
  }
}

}  // namespace

Metadata SyntheticRankMetadata(const std::string& job, int r, int ranks, int per_node,
                               uint64_t world_comm) {
  const int node = r / per_node;
  Metadata m;
  m.job = job;
  m.host = "node" + std::to_string(node);
  m.node = m.host;
  m.pid = 1000 + r;
  m.rank = r;
  m.local_rank = r % per_node;
  m.world_size = ranks;
  m.device = r % per_node;
  m.clock_monotonic_ns = 1000000000;
  CommInfo world;
  world.id = world_comm;
  world.size = ranks;
  world.rank = r;
  world.global_rank = r;
  // As a node's daemon writes it: the global ranks of members on this node, -1 for the others.
  for (int i = 0; i < ranks; ++i) world.members.push_back(i / per_node == node ? i : -1);
  m.comms = {world};
  return m;
}

namespace {

// Rank r's work of one step from true time t: a host-to-device copy on its own stream, 3 GEMMs
// (rank-dependent length) and a kernel. Returns when the rank is ready for the collectives.
int64_t AddCompute(int r, int per_node, int step, int64_t t, std::mt19937_64* rng,
                   std::vector<RankState>* st) {
  int local = r % per_node;
  uint64_t compute = 0x7f0000001000ull + local * 0x100;
  int64_t c = t + static_cast<int64_t>((*rng)() % 20000);
  EventRecord cp = Base(OpKind::kMemcpy, Operation::kMemcpyHtoD, 0x7f0000003000ull + local * 0x100);
  cp.cpu_launch_ns = c - 5000;
  cp.gpu_start_ns = c;
  cp.duration_ns = 8000 + static_cast<int64_t>((*rng)() % 4000);
  cp.bytes = 4u << 20;
  (*st)[r].events.push_back(cp);
  c += cp.duration_ns + 1000;
  for (int g = 0; g < 3; ++g) {
    EventRecord e =
        Base(OpKind::kMatmul, g == 2 ? Operation::kLtMatmul : Operation::kGemmEx, compute);
    e.dtype = static_cast<uint8_t>(DType::kBF16);
    e.m = 4096;
    e.n = g == 1 ? 11008 : 4096;
    e.k = 4096;
    e.flags = g == 0 ? format::kFlagTransB : 0;
    e.cpu_launch_ns = c - 20000 - static_cast<int64_t>((*rng)() % 10000);
    e.gpu_start_ns = c;
    e.duration_ns = 150000 + static_cast<int64_t>((*rng)() % 50000) + r * 1000;
    (*st)[r].events.push_back(e);
    c += e.duration_ns + 2000;
  }
  EventRecord k = Base(OpKind::kKernel, Operation::kKernelLaunch, compute);
  k.name = 1 + (step % 2);
  k.cpu_launch_ns = c - 10000;
  k.gpu_start_ns = c;
  k.duration_ns = 20000 + static_cast<int64_t>((*rng)() % 5000);
  (*st)[r].events.push_back(k);
  return c + k.duration_ns;
}

// One step's tp AllGather per group, each ending at the same true time on its members (+ < 300
// ns jitter). Fills ag_end per rank; returns the latest end.
int64_t AddAllGathers(const SyntheticJob& job, int per_node, int step,
                      const std::vector<int64_t>& ready, std::mt19937_64* rng,
                      std::vector<RankState>* st, std::vector<int64_t>* ag_end) {
  int64_t ag_end_max = 0;
  for (int p = 0; p < job.ranks; p += job.tp) {
    int64_t start = 0;
    for (int r = p; r < std::min(p + job.tp, job.ranks); ++r) start = std::max(start, ready[r]);
    int64_t end = start + 60000 + static_cast<int64_t>((*rng)() % 10000);
    for (int r = p; r < std::min(p + job.tp, job.ranks); ++r) {
      int local = r % per_node;
      EventRecord e =
          Base(OpKind::kCollective, Operation::kAllGather, 0x7f0000002000ull + local * 0x100);
      e.dtype = static_cast<uint8_t>(DType::kBF16);
      e.comm_id = kTpCommBase + p / job.tp;
      e.seq = step;
      e.bytes = 8u << 20;
      e.cpu_launch_ns = ready[r] - 30000;
      e.gpu_start_ns = ready[r] - static_cast<int64_t>((*rng)() % 3000);
      int64_t my_end = end + static_cast<int64_t>((*rng)() % 300);
      e.duration_ns = my_end - e.gpu_start_ns;
      (*st)[r].events.push_back(e);
      (*ag_end)[r] = my_end;
      ag_end_max = std::max(ag_end_max, my_end);
    }
  }
  return ag_end_max;
}

// One step's world AllReduce after the AllGathers, and the host's wait for it. Returns its end.
int64_t AddAllReduce(const SyntheticJob& job, int per_node, int step, int64_t ag_end_max,
                     const std::vector<int64_t>& ag_end, std::mt19937_64* rng,
                     std::vector<RankState>* st) {
  int64_t ar_end = ag_end_max + 400000 + static_cast<int64_t>((*rng)() % 50000);
  for (int r = 0; r < job.ranks; ++r) {
    int local = r % per_node;
    EventRecord e =
        Base(OpKind::kCollective, Operation::kAllReduce, 0x7f0000002000ull + local * 0x100);
    e.dtype = static_cast<uint8_t>(DType::kF32);
    e.comm_id = kWorldComm;
    e.seq = step;
    e.bytes = 64u << 20;
    e.cpu_launch_ns = ag_end[r] - 20000;
    e.gpu_start_ns = ag_end[r] + 1000;
    e.duration_ns = ar_end + static_cast<int64_t>((*rng)() % 300) - e.gpu_start_ns;
    (*st)[r].events.push_back(e);
    EventRecord s =
        Base(OpKind::kHostSync, Operation::kStreamSynchronize, 0x7f0000002000ull + local * 0x100);
    s.cpu_launch_ns = ag_end[r];
    s.gpu_start_ns = ag_end[r];
    s.duration_ns = e.gpu_start_ns + e.duration_ns - ag_end[r] + 2000;
    (*st)[r].events.push_back(s);
  }
  return ar_end;
}

// Rank r's timeline file in its node's folder, with the node's clock skew; false on error.
bool WriteRank(const SyntheticJob& job, int r, int per_node, int64_t end,
               const std::vector<std::string>& dirs, RankState* state, std::string* error) {
  int node = r / per_node;
  int64_t skew = node < static_cast<int>(job.node_skew_ns.size()) ? job.node_skew_ns[node] : 0;
  Metadata m = SyntheticRankMetadata(job.job, r, job.ranks, per_node, kWorldComm);
  m.clock_realtime_ns = end + skew;
  m.strings = {"", "vectorized_elementwise_kernel<float>", "reduce_kernel<bf16>"};
  if (!state->nvtx.empty()) {
    m.strings.insert(m.strings.end(),
                     {"train_step", "forward", "all_reduce_wait", "step_done", "data_loader"});
  }
  for (NvtxEntry e : state->nvtx) {
    if (e.start_ns != 0) e.start_ns += skew;
    if (e.end_ns != 0) e.end_ns += skew;
    m.nvtx.push_back(e);
  }
  CommInfo tp;
  tp.id = kTpCommBase + r / job.tp;
  tp.size = job.tp;
  tp.rank = r % job.tp;
  tp.global_rank = r;
  for (int i = r - r % job.tp; i < r - r % job.tp + job.tp; ++i) tp.members.push_back(i);
  m.comms.push_back(tp);
  m.dump_time_ns = job.start_ns;  // the request's dump_time: the same on every node
  m.window_begin_ns = job.start_ns + skew;
  m.window_end_ns = end + skew;
  std::string path = dirs[node] + "/" + TimelineFileName(r, job.ranks, m.pid);
  auto w = TimelineWriter::Create(path, m, error);
  if (!w) return false;
  // Completion order per stream: sort by end time (stable), as the daemon would see them.
  std::vector<EventRecord>& ev = state->events;
  std::stable_sort(ev.begin(), ev.end(), [](const EventRecord& a, const EventRecord& b) {
    return a.gpu_start_ns + a.duration_ns < b.gpu_start_ns + b.duration_ns;
  });
  for (EventRecord e : ev) {
    e.device = static_cast<int16_t>(m.device);
    e.cpu_launch_ns += skew;
    e.gpu_start_ns += skew;
    w->Append(e);
  }
  return w->Finish(error);
}

}  // namespace

std::vector<std::string> WriteSyntheticJob(const SyntheticJob& job, const std::string& root,
                                           std::string* error) {
  std::vector<std::string> dirs;
  mkdir(root.c_str(), 0755);
  int per_node = (job.ranks + job.nodes - 1) / job.nodes;
  for (int n = 0; n < job.nodes; ++n) {
    dirs.push_back(root + "/node" + std::to_string(n));
    mkdir(dirs.back().c_str(), 0755);
  }
  // True-time schedule shared by all ranks: every step, each rank computes, then an AllGather in
  // its tp group and an AllReduce over the world.
  std::mt19937_64 rng(job.seed);
  std::vector<RankState> st(job.ranks);
  int64_t t = job.start_ns;
  for (int step = 0; step < job.steps; ++step) {
    std::vector<int64_t> ready(job.ranks), ag_end(job.ranks);
    for (int r = 0; r < job.ranks; ++r) ready[r] = AddCompute(r, per_node, step, t, &rng, &st);
    const int64_t ag_end_max = AddAllGathers(job, per_node, step, ready, &rng, &st, &ag_end);
    const int64_t ar_end = AddAllReduce(job, per_node, step, ag_end_max, ag_end, &rng, &st);
    if (job.p2p) AddPipelineSends(step, per_node, ar_end, &rng, &st);
    if (job.nvtx) AddNvtx(t, ready, ag_end, ar_end, &st);
    t = ar_end + 100000;
  }
  for (int r = 0; r < job.ranks; ++r) {
    if (!WriteRank(job, r, per_node, t, dirs, &st[r], error)) return {};
  }
  return dirs;
}

}  // namespace timeline
}  // namespace xtimer

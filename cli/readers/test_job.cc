#include "cli/readers/test_job.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "format/record.h"
#include "proto/hosting.pb.h"
#include "timeline/synthetic_job.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

std::string CommIdString(uint64_t id) {
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

using format::DType;
using format::Operation;
using format::OpKind;
using timeline::EventRecord;

constexpr uint64_t kComputeStream = 0x7f0000001000ull;
constexpr uint64_t kCommStream = 0x7f0000002000ull;
constexpr uint64_t kArBytes = 64u << 20;
constexpr uint64_t kPipeBytes = 8u << 20;

EventRecord Gemm(int64_t start, int64_t duration) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(OpKind::kMatmul);
  e.op = static_cast<uint16_t>(Operation::kGemmEx);
  e.dtype = static_cast<uint8_t>(DType::kBF16);
  e.stream = kComputeStream;
  e.peer = -1;
  e.root = -1;
  e.m = e.n = e.k = 4096;
  e.batch = 1;
  e.cpu_launch_ns = start - 50000;
  e.gpu_start_ns = start;
  e.duration_ns = duration;
  return e;
}

EventRecord AllReduce(int step, int64_t issue, int64_t start, int64_t end) {
  EventRecord e{};
  e.kind = static_cast<uint8_t>(OpKind::kCollective);
  e.op = static_cast<uint16_t>(Operation::kAllReduce);
  e.dtype = static_cast<uint8_t>(DType::kF32);
  e.stream = kCommStream;
  e.peer = -1;
  e.root = -1;
  e.comm_id = kTestWorldComm;
  e.seq = static_cast<uint64_t>(step);
  e.bytes = kArBytes;
  e.batch = 1;
  e.cpu_launch_ns = issue;
  e.gpu_start_ns = start;
  e.duration_ns = end - start;
  return e;
}

// One call of a pipeline group on rank `r`: the group's timing, seq numbered per peer.
EventRecord PipeCall(const TestJob& job, int r, bool send, uint64_t seq, int step, int64_t start,
                     int64_t end) {
  const int half = job.ranks / 2;
  EventRecord e{};
  e.kind = static_cast<uint8_t>(OpKind::kP2P);
  e.op = static_cast<uint16_t>(send ? Operation::kSend : Operation::kRecv);
  e.dtype = static_cast<uint8_t>(DType::kBF16);
  e.flags = format::kFlagInGroup;
  e.group_id = static_cast<uint32_t>(step + 1);
  e.stream = kComputeStream;
  e.peer = r < half ? 1 : 0;
  e.root = -1;
  e.comm_id = kTestPipeComm + static_cast<uint64_t>(r % half);
  e.seq = seq;
  e.bytes = kPipeBytes;
  e.batch = 1;
  e.cpu_launch_ns = start - 30000;
  e.gpu_start_ns = start;
  e.duration_ns = end - start;
  return e;
}

// Every pair's group of `step` (see test_job.h): appends the calls, moves `ready` to the ends.
void PipelineExchange(const TestJob& job, int step, std::vector<int64_t>* ready,
                      std::vector<std::vector<EventRecord>>* events) {
  const int half = job.ranks / 2;
  for (int r0 = 0; r0 < half; ++r0) {
    const int r1 = r0 + half;
    const int64_t end = std::max((*ready)[r0], (*ready)[r1]) + job.p2p_ns;
    const uint64_t seq = 2 * static_cast<uint64_t>(step);  // per peer: two calls a step
    for (int r : {r0, r1}) {
      const int64_t start = (*ready)[r];
      // Stage 0 sends activations and receives gradients; stage 1 sends gradients, receives.
      (*events)[r].push_back(PipeCall(job, r, true, seq + 1, step, start, end));
      (*events)[r].push_back(PipeCall(job, r, false, seq + 2, step, start, end));
      (*ready)[r] = end;
    }
  }
}

int64_t GemmDuration(const TestJob& job, int r, int step) {
  const double f = job.gemm_factor * (r == job.slow_rank ? job.slow_factor : 1.0);
  const uint64_t noise = static_cast<uint64_t>(r) * 7919 + static_cast<uint64_t>(step) * 104729 +
                         job.noise_seed * 7368787;
  return static_cast<int64_t>(job.compute_ns * f) + static_cast<int64_t>(noise % 20000);
}

// The steps as NVTX step ranges on the rank's clock (`skew` added).
std::vector<timeline::NvtxEntry> StepMarks(const std::vector<std::pair<int64_t, int64_t>>& steps,
                                           int64_t skew) {
  std::vector<timeline::NvtxEntry> marks;
  for (const auto& s : steps) {
    timeline::NvtxEntry e{};
    e.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
    e.flags = format::kNvtxStep;
    e.tid = 1;
    e.start_ns = s.first + skew;
    e.end_ns = s.second + skew;
    marks.push_back(e);
  }
  return marks;
}

timeline::Metadata RankMetadata(const TestJob& job, int r, int per_node, int64_t end) {
  timeline::Metadata m =
      timeline::SyntheticRankMetadata(job.job, r, job.ranks, per_node, kTestWorldComm);
  if (job.pipeline) {
    const int half = job.ranks / 2;
    timeline::CommInfo pipe;
    pipe.id = kTestPipeComm + static_cast<uint64_t>(r % half);
    pipe.size = 2;
    pipe.rank = r < half ? 0 : 1;
    pipe.global_rank = r;
    pipe.members = {r % half, r % half + half};
    m.comms.push_back(pipe);
  }
  m.clock_realtime_ns = end;
  m.dump_time_ns = end;
  m.window_begin_ns = job.start_ns;
  m.window_end_ns = end;
  return m;
}

// The host rank's NVTX push/pop range over each of its host gaps (on the file's clock).
void AddHostRanges(const TestJob& job, const std::vector<std::pair<int64_t, int64_t>>& gaps,
                   int64_t skew, timeline::Metadata* m) {
  const uint32_t name = static_cast<uint32_t>(m->strings.size());
  m->strings.push_back(job.host_range);
  for (const auto& g : gaps) {
    timeline::NvtxEntry e{};
    e.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
    e.tid = static_cast<uint32_t>(m->pid);
    e.name = name;
    e.start_ns = g.first + skew;
    e.end_ns = g.second + skew;
    m->nvtx.push_back(e);
  }
}

// hang-summary-<node>.json per node: every rank's progress on the world communicator, as xtimerd's
// HangCheck reports it.
bool WriteSummaries(const TestJob& job, const std::vector<std::string>& dirs, int per_node,
                    const std::vector<int64_t>& issue_at_stop, int64_t last_end,
                    std::string* error) {
  for (size_t n = 0; n < dirs.size(); ++n) {
    const int64_t skew = n < job.node_skew_ns.size() ? job.node_skew_ns[n] : 0;
    const double now_s = (last_end + skew) * 1e-9 + job.hang_after_s;
    HangCheckResponse resp;
    // The daemons of emulated nodes share the machine's hostname; the ranks' host labels differ.
    const std::string host = "node" + std::to_string(n);
    resp.set_node("vm");
    resp.set_now(now_s);
    for (int r = static_cast<int>(n) * per_node;
         r < std::min(job.ranks, static_cast<int>(n + 1) * per_node); ++r) {
      RankProgress* p = resp.add_ranks();
      p->set_job(job.job);
      p->set_rank(r);
      p->set_local_rank(r % per_node);
      p->set_world_size(job.ranks);
      p->set_pid(1000 + r);
      p->set_device(r % per_node);
      p->set_node(resp.node());
      p->set_host(host);
      CommProgress* c = p->add_comms();
      c->set_comm_id(CommIdString(kTestWorldComm));
      c->set_comm_rank(r);
      c->set_comm_size(job.ranks);
      c->set_last_completed_seq(job.stop_step - 1);
      c->set_last_completed_age_s(job.hang_after_s);
      c->set_hang_threshold_s(10);
      if (r == job.stop_rank) {
        c->set_last_issued_seq(job.stop_step - 1);
        p->set_last_activity("GemmEx m=4096 n=4096 k=4096 completed " +
                             std::to_string(static_cast<int>(job.hang_after_s)) + " s ago");
        p->set_last_activity_age_s(job.hang_after_s);
        continue;
      }
      const double age = now_s - (issue_at_stop[r] + skew) * 1e-9;
      c->set_last_issued_seq(job.stop_step);
      c->set_oldest_inflight_age_s(age);
      CollectiveArrival* a = c->mutable_inflight();
      a->set_comm_id(CommIdString(kTestWorldComm));
      a->set_seq(job.stop_step);
      a->set_count(kArBytes / 4);
      a->set_bytes(kArBytes);
      a->set_op(OpCode::AllReduce);
      a->set_dtype(DTypeCode::fp32);
      a->set_state(CollectiveArrival::started);
      a->set_root(-1);
      a->set_comm_size(job.ranks);
      a->set_issue_age_s(age);
      p->set_last_activity("AllReduce seq " + std::to_string(job.stop_step) + " issued");
      p->set_last_activity_age_s(age);
    }
    std::string json;
    google::protobuf::util::JsonPrintOptions opt;
    opt.add_whitespace = true;
    if (!google::protobuf::util::MessageToJsonString(resp, &json, opt).ok()) {
      *error = "cannot encode the hang summary";
      return false;
    }
    std::ofstream(dirs[n] + "/hang-summary-" + host + ".json") << json;
  }
  return true;
}

}  // namespace

std::vector<std::string> WriteTestJob(const TestJob& job, const std::string& root,
                                      std::string* error) {
  std::vector<std::string> dirs;
  mkdir(root.c_str(), 0755);
  const int per_node = (job.ranks + job.nodes - 1) / job.nodes;
  for (int n = 0; n < job.nodes; ++n) {
    dirs.push_back(root + "/node" + std::to_string(n));
    mkdir(dirs.back().c_str(), 0755);
  }
  const bool hang = job.stop_rank >= 0 && job.stop_step >= 1 && job.stop_step < job.steps;
  const int rounds = hang ? job.stop_step + 1 : job.steps;
  std::vector<std::vector<EventRecord>> events(job.ranks);
  std::vector<std::pair<int64_t, int64_t>> steps;  // each step's start and end
  std::vector<int64_t> ready(job.ranks);
  std::vector<std::pair<int64_t, int64_t>> host_gaps;  // host_rank's
  int64_t t = job.start_ns, last_end = t;
  for (int step = 0; step < rounds; ++step) {
    const bool stop = hang && step == job.stop_step;
    for (int r = 0; r < job.ranks; ++r) {
      const int64_t d = GemmDuration(job, r, step);
      const int64_t gap = r == job.host_rank ? job.host_gap_ns : 0;
      ready[r] = t + gap + d;
      if (stop && r == job.stop_rank) continue;
      if (gap > 0) host_gaps.push_back({t, t + gap});
      events[r].push_back(Gemm(t + gap, d));
      last_end = std::max(last_end, ready[r]);
    }
    if (stop) break;  // the others issue the AllReduce and wait in it; no file holds it
    if (job.pipeline) PipelineExchange(job, step, &ready, &events);
    const int64_t last = *std::max_element(ready.begin(), ready.end());
    const int64_t end = last + static_cast<int64_t>(job.transfer_ns * job.transfer_factor);
    for (int r = 0; r < job.ranks; ++r) {
      events[r].push_back(AllReduce(step, ready[r] - 40000, ready[r] + 1000, end));
    }
    steps.emplace_back(t, end);
    last_end = end;
    t = end + 50000;
  }
  for (int r = 0; r < job.ranks; ++r) {
    const int node = r / per_node;
    const int64_t skew = node < static_cast<int>(job.node_skew_ns.size()) ? job.node_skew_ns[node] : 0;
    timeline::Metadata m = RankMetadata(job, r, per_node, last_end + skew);
    const std::string craft = r == job.craft_rank ? job.craft : "";
    if (craft == "world") m.world_size = INT32_MAX;
    if (craft == "rank") m.rank = INT32_MAX;
    if (craft == "job") m.job = "other" + job.job;
    if (job.step_marks) m.nvtx = StepMarks(steps, skew);
    if (r == job.host_rank && !job.host_range.empty()) AddHostRanges(job, host_gaps, skew, &m);
    auto w = timeline::TimelineWriter::Create(
        dirs[node] + "/" + timeline::TimelineFileName(r, job.ranks, m.pid), m, error);
    if (!w) return {};
    for (EventRecord e : events[r]) {
      e.device = static_cast<int16_t>(m.device);
      e.cpu_launch_ns += skew;
      e.gpu_start_ns += skew;
      if (craft == "duration") e.duration_ns = -5;
      if (craft == "shape" && e.m > 0) e.m = int64_t{1} << 62;
      if (craft == "time") e.gpu_start_ns = INT64_MAX - 1000 + e.seq;
      w->Append(e);
    }
    if (!w->Finish(error)) return {};
  }
  if (hang && !WriteSummaries(job, dirs, per_node, ready, last_end, error)) return {};
  return dirs;
}

}  // namespace cli
}  // namespace xtimer

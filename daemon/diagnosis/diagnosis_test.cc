// Four synthetic ranks of one job through the Aggregator; after 20 one-second steps rank 2 never
// issues the next AllReduce while ranks 0, 1 and 3 wait in it.
#include "daemon/diagnosis/diagnosis.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "daemon/base/test_util.h"
#include "daemon/control/control_handler.h"
#include "daemon/control/control_json.h"
#include "daemon/diagnosis/diagnosis_metrics.h"
#include "daemon/diagnosis/hang_check.h"
#include "daemon/diagnosis/hang_dumper.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/dumps/stack_capture.h"
#include "daemon/model/aggregator.h"
#include "format/record.h"
#include "format/ring.h"
#include "proto/wire_enums.h"
#include "stacktrace/stacks_file.h"
#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

constexpr int64_t kSec = 1000000000;
constexpr int64_t kT0 = int64_t{1700000000} * kSec;
constexpr uint64_t kComm = 0xabc;
constexpr int kRanks = 4;
constexpr int kSteps = 20;

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

class DiagnosisTest : public ::testing::Test {
 protected:
  // The ranks this node's daemon holds (all four here; CulpritNodeTest holds rank 2 alone).
  virtual bool Local(int rank) const { return true; }

  void SetUp() override {
    tmp_ = testing::MakeTempDir("diagnosis_test");
    std::string error;
    ASSERT_TRUE(PrepareDumpRoot(tmp_ + "/root", &root_, &error)) << error;
    aggregator_ = std::make_unique<Aggregator>(AggregatorOptions(), kT0);
    auto clock = [this] { return now_.load(); };
    dumps_ = std::make_unique<DumpManager>(aggregator_.get(), root_, "node", clock);
    // Each rank answers a stack request with a raw capture of one Python frame (a stand-in for
    // the hook; the ring server's part is daemon/stack_capture_test).
    stacks_ = std::make_unique<StackCapturer>(
        aggregator_.get(),
        [](ProcessId, int, StackSink sink) {
          const std::string raw =
              R"({"format": "xtimer-raw-stacks", "version": 1, "threads": [{"tid": 7, "name": )"
              R"("main", "pcs": []}], "python_threads": [{"tid": 7, "frames": [{"function": )"
              R"("wait_for_allreduce", "file": "/job/train.py", "line": 12}]}]})";
          StackAnswer a;
          a.memfd = memfd_create("raw", MFD_CLOEXEC);
          a.size = raw.size();
          if (write(a.memfd, raw.data(), raw.size()) != static_cast<ssize_t>(raw.size())) abort();
          sink(std::move(a));
        },
        root_, "node", clock);
    dumper_ = std::make_unique<HangDumper>(dumps_.get(), "node", 100000, stacks_.get());
    diagnosis_ = std::make_unique<LiveDiagnosis>(aggregator_.get(), DiagnosisOptions(), clock,
                                                 [this](LiveState* s) { dumper_->Update(s); });
    ControlOptions co;
    co.node = "node";
    co.now_ns = clock;
    co.diagnosis = diagnosis_.get();
    handler_ = std::make_unique<ControlHandler>(aggregator_.get(), dumps_.get(), co);
    for (int r = 0; r < kRanks; ++r) {
      if (!Local(r)) continue;
      format::Identity id;
      id.job = "train";
      id.host = "node";
      id.pod = "pod";
      id.rank = r;
      id.local_rank = r;
      id.world_size = kRanks;
      ids_[r] = aggregator_->AddProcess(1000 + r, id);
      identity_[r] = id;
      format::RecordSlot comm = testing::MakeComm(kComm, r, kRanks);
      comm.comm.global_rank = r;
      aggregator_->Ingest(ids_[r], &comm, 1, kT0);
    }
  }
  void TearDown() override {
    diagnosis_.reset();
    handler_.reset();
    dumps_.reset();
    testing::RemoveTree(tmp_);
  }

  // Step `seq` at kT0 + seq s: a 400 ms GEMM, then the AllReduce; rank 2 arrives 50 ms late.
  void Step(uint64_t seq) {
    const int64_t t = kT0 + static_cast<int64_t>(seq) * kSec;
    const int64_t last = t + 400000000 + 50000000;
    for (int r = 0; r < kRanks; ++r) {
      if (!Local(r)) continue;
      const int64_t gemm_ns = r == 2 ? 450000000 : 400000000;
      format::RecordSlot ops[2];
      ops[0] = MakeOp(Operation::kGemmEx, DType::kF32, gemm_ns);
      ops[0].op.m = ops[0].op.n = ops[0].op.k = 1024;
      ops[0].op.cpu_launch_ns = t - 1000;
      ops[0].op.gpu_start_ns = t;
      ops[1] = MakeOp(Operation::kAllReduce, DType::kF32, 0);
      OpRecordFor(seq, t + gemm_ns, last + 10000000, &ops[1].op);
      aggregator_->Ingest(ids_[r], ops, 2, t + kSec / 2);
    }
  }

  // Steps 1..kSteps, with a diagnosis pass after every fifth (the cadence's history).
  void StepsWithPasses() {
    for (uint64_t s = 1; s <= kSteps; ++s) {
      Step(s);
      if (s % 5 == 0) {
        now_ = kT0 + static_cast<int64_t>(s) * kSec + kSec / 2;
        diagnosis_->RunOnce();
      }
    }
  }

  static void OpRecordFor(uint64_t seq, int64_t start, int64_t end, format::OpRecord* r) {
    r->comm_id = kComm;
    r->seq = seq;
    r->comm_size = kRanks;
    r->count = 1 << 20;
    r->bytes = 4 << 20;
    r->device = 0;
    r->cpu_launch_ns = start - 1000;
    r->gpu_start_ns = start;
    r->duration_ns = end - start;
  }

  // Ranks other than `absent` issued `seq` at `t` and wait in it; `absent` issued up to seq - 1.
  void Stall(uint64_t seq, int64_t t, int absent) {
    for (int r = 0; r < kRanks; ++r) {
      if (!Local(r)) continue;
      ProcessStatus st;
      st.identity = identity_[r];
      st.heartbeat_ns = t;
      st.inflight_valid = true;
      format::InflightRow row{kComm, seq - 1, seq - 1, 0};
      row.device = 0;
      if (r != absent) {
        row.last_issued_seq = seq;
        row.oldest_launch_ns = t;
        row.oldest.state = format::InflightState::kStarted;
        row.oldest.op = static_cast<uint16_t>(Operation::kAllReduce);
        row.oldest.dtype = static_cast<uint8_t>(DType::kF32);
        row.oldest.seq = seq;
        row.oldest.count = 1 << 20;
        row.oldest.bytes = 4 << 20;
        row.oldest.root = -1;
        row.oldest.comm_size = kRanks;
        row.oldest.launch_ns = t;
        row.oldest.gpu_start_ns = t + 1000;
      }
      st.inflight.push_back(row);
      aggregator_->UpdateStatus(ids_[r], st);
    }
  }

  std::string Exposition() {
    return prometheus::TextSerializer().Serialize(
        BuildDiagnosisFamilies(*diagnosis_->Latest()));
  }

  std::string tmp_, root_;
  std::atomic<int64_t> now_{kT0};
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<DumpManager> dumps_;
  std::unique_ptr<StackCapturer> stacks_;
  std::unique_ptr<HangDumper> dumper_;
  std::unique_ptr<LiveDiagnosis> diagnosis_;
  std::unique_ptr<ControlHandler> handler_;
  ProcessId ids_[kRanks] = {};
  format::Identity identity_[kRanks];
};

TEST_F(DiagnosisTest, RankThatNeverIssuesIsTheCulpritWithinTheAdaptiveThreshold) {
  for (uint64_t s = 1; s <= kSteps; ++s) {
    Step(s);
    if (s % 5 == 0) {
      now_ = kT0 + static_cast<int64_t>(s) * kSec + kSec / 2;
      diagnosis_->RunOnce();  // counts instances as they complete, as the thread does
    }
  }
  const int64_t stall_t = kT0 + (kSteps + 1) * kSec;
  Stall(kSteps + 1, stall_t, /*absent=*/2);

  // 5 s after: below the threshold (10 x the 1 s cadence).
  now_ = stall_t + 5 * kSec;
  diagnosis_->RunOnce();
  auto state = diagnosis_->Latest();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_TRUE(state->jobs[0].report.hangs.empty());
  std::string text = Exposition();
  EXPECT_NE(text.find("xtimer_comm_hang_threshold_seconds{job=\"train\",host=\"node\",pod=\"pod\","
                      "rank=\"2\",local_rank=\"2\",comm=\"0x0000000000000abc\"} 10"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("xtimer_hang_culprit{"), std::string::npos);
  EXPECT_TRUE(List(root_).empty());

  // Counters: 20 instances each; rank 2 arrived last in every counted one, 50 ms each.
  EXPECT_NE(text.find("xtimer_collective_instances_total{job=\"train\",host=\"node\",pod=\"pod\","
                      "rank=\"1\",local_rank=\"1\",comm=\"0x0000000000000abc\"} 20"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_collective_arrived_last_total{job=\"train\",host=\"node\","
                      "pod=\"pod\",rank=\"2\",local_rank=\"2\",comm=\"0x0000000000000abc\"} 20"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_collective_wait_caused_seconds_total{job=\"train\",host=\"node\","
                      "pod=\"pod\",rank=\"2\",local_rank=\"2\",comm=\"0x0000000000000abc\"} 3"),
            std::string::npos)
      << text;  // 20 instances x 3 ranks x 50 ms
  EXPECT_NE(text.find("xtimer_bus_bandwidth_true_bytes_per_second{job=\"train\""), std::string::npos);

  // 15 s after: a verdict naming rank 2, within 30 s of the last progress.
  now_ = stall_t + 15 * kSec;
  diagnosis_->RunOnce();
  state = diagnosis_->Latest();
  ASSERT_EQ(state->jobs[0].report.hangs.size(), 1u);
  const analysis::HangVerdict& v = state->jobs[0].report.hangs[0];
  EXPECT_EQ(v.kind, analysis::HangKind::kNeverIssued);
  EXPECT_EQ(v.culprit_ranks, std::vector<int32_t>({2}));
  EXPECT_EQ(v.waiting_ranks, std::vector<int32_t>({0, 1, 3}));
  EXPECT_EQ(v.seq, static_cast<uint64_t>(kSteps + 1));
  // One judgment: the waiting decision uses the verdict's threshold (10 s here), not
  // --hang-timeout (300 s).
  ASSERT_EQ(state->jobs[0].ranks.size(), 4u);
  for (const RankLive& r : state->jobs[0].ranks) {
    const bool waits = r.process.rank != 2;
    EXPECT_EQ(r.waiting, waits) << "rank " << r.process.rank;
  }

  text = Exposition();
  EXPECT_NE(text.find("xtimer_rank_waiting_hang{job=\"train\",host=\"node\",pod=\"pod\",rank=\"0\","
                      "local_rank=\"0\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_rank_waiting_hang{job=\"train\",host=\"node\",pod=\"pod\",rank=\"2\","
                      "local_rank=\"2\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xtimer_hang_culprit{job=\"train\",host=\"node\",pod=\"pod\",rank=\"2\","
                      "local_rank=\"2\",comm=\"0x0000000000000abc\",kind=\"never_issued\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(testing::Lines(text, "xtimer_hang_culprit{").size(), 1u) << text;
  EXPECT_NE(text.find("xtimer_hang_verdict{job=\"train\",comm=\"0x0000000000000abc\","
                      "kind=\"never_issued\",seq=\"21\",op=\"AllReduce\"} 1"),
            std::string::npos)
      << text;

  // The automatic dump: hang-<world communicator>-<its first uncompleted seq>/train/ with the
  // four ranks and the summary (daemon/diagnosis/hang_dumper.h).
  const std::string hang_dir = "hang-0x0000000000000abc-21";
  EXPECT_EQ(HangSummaryName("node-1"), "hang-summary-node-1.json");
  EXPECT_EQ(HangSummaryName(".."), "hang-summary.json");
  EXPECT_EQ(HangSummaryName("a/../b"), "hang-summary-" + SanitizeJobId("a/../b") + ".json");
  EXPECT_EQ(HangSummaryName("a/../b").find('/'), std::string::npos);
  EXPECT_EQ(List(root_), std::vector<std::string>({hang_dir}));
  // The stacks come from the dumper's own thread: waited for (the files, then their count, which
  // is taken after each file is in place).
  testing::WaitFor(
      [&] {
        const auto outcomes = stacks_->Outcomes();
        const auto written = outcomes.find("written");
        return List(root_ + "/" + hang_dir + "/train").size() >= 9 &&
               written != outcomes.end() && written->second >= 4;
      },
      10000);
  const std::vector<std::string> files = List(root_ + "/" + hang_dir + "/train");
  ASSERT_EQ(files.size(), 9u) << ::testing::PrintToString(files);  // 4 timelines, 4 stacks
  EXPECT_EQ(files.back(), "hang-summary-node.json");
  // Every rank's stacks beside its timeline.
  stacktrace::StacksFile stacks;
  std::string error;
  ASSERT_TRUE(stacktrace::ParseStacksJson(
      testing::ReadFile(root_ + "/" + hang_dir + "/train/00002-00004.stacks"), &stacks, &error))
      << error;
  EXPECT_EQ(stacks.rank, 2);
  ASSERT_EQ(stacks.threads.size(), 1u);
  ASSERT_EQ(stacks.threads[0].frames.size(), 1u);
  EXPECT_EQ(stacks.frames[stacks.threads[0].frames[0]].function, "wait_for_allreduce");
  EXPECT_EQ(stacks_->Outcomes().at("written"), 4u);
  const std::string summary =
      testing::ReadFile(root_ + "/" + hang_dir + "/train/hang-summary-node.json");
  EXPECT_NE(summary.find("\"kind\":\"never_issued\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"culprit_ranks\":[2]"), std::string::npos) << summary;
  EXPECT_EQ(state->jobs[0].dump_dir, root_ + "/" + hang_dir + "/train");

  // HangCheck over the JSON path names the culprit, the evidence and the dump.
  std::string json;
  ASSERT_EQ(HandleJson(handler_.get(), "HangCheck", "{}", &json), 200) << json;
  EXPECT_NE(json.find("\"kind\":\"never_issued\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"culprit_ranks\":[2]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"waiting_ranks\":[0,1,3]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"comm_id\":\"0x0000000000000abc\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"dump_dir\":\"" + root_ + "/" + hang_dir + "/train\""),
            std::string::npos)
      << json;
  ASSERT_EQ(HandleJson(handler_.get(), "HangCheck", "{\"job\": \"other\"}", &json), 200);
  EXPECT_EQ(json.find("never_issued"), std::string::npos) << json;
  EXPECT_EQ(HandleJson(handler_.get(), "HangCheck", "{\"jobs\": 1}", &json), 400) << json;

  // Once per hang: later passes write nothing more.
  now_ = stall_t + 25 * kSec;
  diagnosis_->RunOnce();
  EXPECT_EQ(List(root_).size(), 1u);

  // Progress resumes: the verdict and the culprit series go; a later hang dumps again.
  Step(kSteps + 1);
  Step(kSteps + 2);
  now_ = stall_t + 26 * kSec;
  Stall(kSteps + 3, now_ - kSec, /*absent=*/-1);
  diagnosis_->RunOnce();
  for (const auto& h : diagnosis_->Latest()->jobs[0].report.hangs) {
    ADD_FAILURE() << analysis::HangKindName(h.kind) << " seq " << h.seq << ": "
                  << ::testing::PrintToString(h.evidence);
  }
  EXPECT_EQ(testing::Lines(Exposition(), "xtimer_hang_culprit{").size(), 0u);
  now_ = stall_t + 50 * kSec;  // every rank inside seq 23 for 25 s: a new hang
  diagnosis_->RunOnce();
  ASSERT_FALSE(diagnosis_->Latest()->jobs[0].report.hangs.empty());
  EXPECT_EQ(diagnosis_->Latest()->jobs[0].report.hangs[0].kind,
            analysis::HangKind::kStuckInCollective);
  EXPECT_EQ(List(root_).size(), 2u);
}

// The culprit's node of a job on 4 one-rank nodes (campaign 201/1): rank 2 never issues seq 21
// and its peers wait on their own nodes. This daemon sees no waiter, so no verdict; it still
// writes the automatic dump, into the folder the peers' daemons name alike, once rank 2 has been
// idle past its threshold (10 s), so that `xtimer analyze` over every node's dump sees rank 2's
// progress and names it (before: no dump here, and the 3 others could not name the absent rank).
class CulpritNodeTest : public DiagnosisTest {
 protected:
  bool Local(int rank) const override { return rank == 2; }
};

TEST_F(CulpritNodeTest, IdleRankWithRemotePeersIsDumpedWithoutAVerdict) {
  StepsWithPasses();
  const int64_t stall_t = kT0 + (kSteps + 1) * kSec;
  Stall(kSteps + 1, stall_t, /*absent=*/2);
  now_ = stall_t + 5 * kSec;  // idle 5.5 s: within the threshold
  diagnosis_->RunOnce();
  EXPECT_TRUE(List(root_).empty());
  now_ = stall_t + 15 * kSec;
  diagnosis_->RunOnce();
  auto state = diagnosis_->Latest();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_TRUE(state->jobs[0].report.hangs.empty()) << "one member cannot be judged alone";
  const std::string hang_dir = "hang-0x0000000000000abc-21";  // as the waiting nodes name it
  ASSERT_EQ(List(root_), std::vector<std::string>({hang_dir}));
  const std::string summary =
      testing::ReadFile(root_ + "/" + hang_dir + "/train/hang-summary-node.json");
  EXPECT_NE(summary.find("\"last_issued_seq\":\"20\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"verdicts\":[]"), std::string::npos) << summary;
  EXPECT_EQ(state->jobs[0].dump_dir, root_ + "/" + hang_dir + "/train");
  // Progress again: the next idle stall is a new hang.
  JobLive busy = state->jobs[0];
  busy.ranks[0].input.last_activity_ns = now_;
  EXPECT_FALSE(IdleWithRemotePeers(busy, now_));
  busy = state->jobs[0];
  busy.ranks[0].input.comms[0].size = 1;  // every member local: the local analysis judges
  EXPECT_FALSE(IdleWithRemotePeers(busy, now_));
  EXPECT_TRUE(IdleWithRemotePeers(state->jobs[0], now_));
}

// A node that holds every rank but rank 2, which is on another node.
class WaitingNodeTest : public DiagnosisTest {
 protected:
  bool Local(int rank) const override { return rank != 2; }
};

// The first collective of a job hangs on a rank of another node (fault campaign seed 1 run 50:
// a count mismatch at step 1). This node's members all wait, with no cadence to judge by: no
// verdict here, but a dump past --hang-early-seconds, so that `xtimer analyze` of the hang's
// folder holds every node's members (the mismatch's majority).
TEST_F(WaitingNodeTest, MembersWaitingEarlyOnARemoteRankAreDumpedWithoutAVerdict) {
  const int64_t stall_t = kT0 + kSec;
  Stall(1, stall_t, /*absent=*/2);
  now_ = stall_t + 29 * kSec;  // within --hang-early-seconds (30)
  diagnosis_->RunOnce();
  EXPECT_TRUE(List(root_).empty());
  now_ = stall_t + 31 * kSec;
  diagnosis_->RunOnce();
  auto state = diagnosis_->Latest();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_TRUE(state->jobs[0].report.hangs.empty()) << "the culprit is not among these members";
  const std::string hang_dir = "hang-0x0000000000000abc-1";  // as the culprit's node names it
  ASSERT_EQ(List(root_), std::vector<std::string>({hang_dir}));
  EXPECT_EQ(state->jobs[0].dump_dir, root_ + "/" + hang_dir + "/train");
  const JobLive& job = state->jobs[0];
  EXPECT_TRUE(WaitingOnRemotePeers(job, now_, 30 * kSec));
  EXPECT_FALSE(WaitingOnRemotePeers(job, now_, 32 * kSec)) << "not yet past the threshold";
  JobLive busy = job;
  busy.ranks[1].input.last_activity_ns = now_;
  EXPECT_FALSE(WaitingOnRemotePeers(busy, now_, 30 * kSec)) << "a member still works";
  busy = job;
  busy.ranks[0].input.progress[0].has_inflight = false;
  EXPECT_FALSE(WaitingOnRemotePeers(busy, now_, 30 * kSec)) << "a member does not wait";
  busy = job;
  for (RankLive& r : busy.ranks) r.input.comms[0].size = 3;
  EXPECT_FALSE(WaitingOnRemotePeers(busy, now_, 30 * kSec)) << "every member local";
  busy = job;
  busy.ranks[2].comms[0].cadence_samples = 5;
  EXPECT_FALSE(WaitingOnRemotePeers(busy, now_, 30 * kSec)) << "a cadence: the analysis judges";
}

// With a cadence, the waiting node's own verdict (waiting_on_remote at the adaptive threshold)
// dumps; nothing dumps at --hang-early-seconds before it. A cadence factor of 40 puts that
// threshold (40 x the 1 s steps) past the early 30 s, so an early dump would show.
TEST_F(WaitingNodeTest, MembersWaitingWithACadenceAreNotDumpedEarly) {
  DiagnosisOptions slow;
  slow.cadence_factor = 40;
  diagnosis_ = std::make_unique<LiveDiagnosis>(
      aggregator_.get(), slow, [this] { return now_.load(); },
      [this](LiveState* s) { dumper_->Update(s); });
  StepsWithPasses();
  const int64_t stall_t = kT0 + (kSteps + 1) * kSec;
  Stall(kSteps + 1, stall_t, /*absent=*/2);
  now_ = stall_t + 31 * kSec;  // past --hang-early-seconds, within the adaptive threshold
  diagnosis_->RunOnce();
  EXPECT_TRUE(diagnosis_->Latest()->jobs[0].report.hangs.empty());
  EXPECT_TRUE(List(root_).empty());
  now_ = stall_t + 45 * kSec;  // past it: the verdict, and its dump
  diagnosis_->RunOnce();
  EXPECT_FALSE(diagnosis_->Latest()->jobs[0].report.hangs.empty());
  EXPECT_EQ(List(root_).size(), 1u);
}

// Every surface's "waiting" for each local rank, as the control port and /metrics answer.
struct Surfaces {
  std::map<int, bool> gauge, status, hangcheck, hangcheck_comm, decision;
};

// Issue 37: the waiting gauges, Status and HangCheck show the live diagnosis's one decision (its
// last pass), so they agree with each other and with the pass at every read, including a read
// made after the stall crossed the threshold but before a pass judged it; the automatic dump's
// summary carries the decision of the pass that wrote it.
// One all-reduce a second: every rank's step histogram counts each step once over passes that
// each see the whole ring (kSteps - 1 steps between kSteps collectives), all in the 1 s bucket.
TEST_F(DiagnosisTest, StepHistogramCountsEveryStepOnce) {
  StepsWithPasses();
  const std::string text = Exposition();
  for (int r = 0; r < kRanks; ++r) {
    const std::string labels = "{job=\"train\",host=\"node\",pod=\"pod\",rank=\"" +
                               std::to_string(r) + "\",local_rank=\"" + std::to_string(r) +
                               "\",source=\"collectives\"";
    EXPECT_NE(text.find("xtimer_step_seconds_count" + labels + "} " +
                        std::to_string(kSteps - 1)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("xtimer_step_seconds_bucket" + labels + ",le=\"0.5\"} 0"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("xtimer_step_seconds_bucket" + labels + ",le=\"1\"} " +
                        std::to_string(kSteps - 1)),
              std::string::npos)
        << text;
  }
  const RankLive& r0 = diagnosis_->Latest()->jobs.at(0).ranks.at(0);
  EXPECT_EQ(r0.steps.guess.per_step, 1u);
  EXPECT_DOUBLE_EQ(r0.steps.sum_s, kSteps - 1);
}

TEST_F(DiagnosisTest, SurfacesShowTheOneDecisionOfTheLastPass) {
  StepsWithPasses();
  const int64_t stall_t = kT0 + (kSteps + 1) * kSec;
  Stall(kSteps + 1, stall_t, /*absent=*/2);
  auto read = [&] {
    Surfaces s;
    for (const RankLive& r : diagnosis_->Latest()->jobs.at(0).ranks) {
      s.decision[r.process.rank] = r.waiting;
    }
    const std::string text = Exposition();
    for (int r = 0; r < kRanks; ++r) {
      const std::string key = "xtimer_rank_waiting_hang{job=\"train\",host=\"node\",pod=\"pod\","
                              "rank=\"" + std::to_string(r) + "\",local_rank=\"" +
                              std::to_string(r) + "\"} ";
      const size_t at = text.find(key);
      if (at != std::string::npos) s.gauge[r] = text.compare(at + key.size(), 1, "1") == 0;
    }
    std::string json;
    EXPECT_EQ(HandleJson(handler_.get(), "Status", "{}", &json), 200) << json;
    StatusResponse status;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &status).ok()) << json;
    for (const ProcessInfo& p : status.processes()) s.status[p.rank()] = p.hang();
    EXPECT_EQ(HandleJson(handler_.get(), "HangCheck", "{}", &json), 200) << json;
    HangCheckResponse check;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &check).ok()) << json;
    for (const RankProgress& r : check.ranks()) {
      bool past = false, flagged = false;
      for (const CommProgress& c : r.comms()) {
        past |= c.oldest_inflight_age_s() > c.hang_threshold_s();
        flagged |= c.hang();
      }
      s.hangcheck[r.rank()] = flagged;
      s.hangcheck_comm[r.rank()] = past;
    }
    return s;
  };
  auto expect_all = [&](const Surfaces& s, const std::map<int, bool>& want, const char* when) {
    EXPECT_EQ(s.decision, want) << when;
    EXPECT_EQ(s.gauge, want) << when;
    EXPECT_EQ(s.status, want) << when;
    EXPECT_EQ(s.hangcheck, want) << when;
  };
  const std::map<int, bool> none = {{0, false}, {1, false}, {2, false}, {3, false}};
  const std::map<int, bool> victims = {{0, true}, {1, true}, {2, false}, {3, true}};

  now_ = stall_t + 5 * kSec;  // below the 10 s threshold
  diagnosis_->RunOnce();
  expect_all(read(), none, "5 s into the stall");
  // 15 s into the stall, before any pass judged it: every surface still shows the last pass.
  now_ = stall_t + 15 * kSec;
  expect_all(read(), none, "15 s, no pass yet");
  diagnosis_->RunOnce();
  const Surfaces judged = read();
  expect_all(judged, victims, "15 s, judged");
  // HangCheck's own numbers (age past the threshold it reports) say the same.
  EXPECT_EQ(judged.hangcheck_comm, victims);
  // The automatic dump of that pass carries the same decision.
  const std::string dir = diagnosis_->Latest()->jobs[0].dump_dir;
  ASSERT_FALSE(dir.empty());
  HangCheckResponse summary;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  testing::ReadFile(dir + "/hang-summary-node.json"), &summary)
                  .ok());
  std::map<int, bool> dumped;
  for (const RankProgress& r : summary.ranks()) {
    bool flagged = false;
    for (const CommProgress& c : r.comms()) flagged |= c.hang();
    dumped[r.rank()] = flagged;
  }
  EXPECT_EQ(dumped, victims);
  ASSERT_EQ(summary.verdicts_size(), 1);
  EXPECT_EQ(summary.verdicts(0).culprit_ranks(0), 2);

  // Progress resumes: until the next pass the surfaces keep the judged decision, then all clear.
  Step(kSteps + 1);
  Stall(kSteps + 2, stall_t + 16 * kSec, /*absent=*/-1);
  now_ = stall_t + 16 * kSec;
  expect_all(read(), victims, "resumed, no pass yet");
  diagnosis_->RunOnce();
  expect_all(read(), none, "resumed, judged");
}

TEST_F(DiagnosisTest, HangCheckWithoutDiagnosisAndTheThreadPublishes) {
  ControlOptions co;
  co.now_ns = [] { return kT0; };
  ControlHandler bare(aggregator_.get(), dumps_.get(), co);
  std::string json;
  EXPECT_EQ(HandleJson(&bare, "HangCheck", "{}", &json), 409) << json;

  Step(1);
  diagnosis_->Start();
  // Ingest and scrapes while the pass thread runs (TSan checks the three against each other).
  for (uint64_t s = 2; s <= 30; ++s) {
    Step(s);
    Exposition();
  }
  ASSERT_TRUE(testing::WaitFor([&] { return diagnosis_->Latest()->passes > 0; }, 30000));
  diagnosis_->Stop();
  // The thread's last pass may have copied a rank between two ops of one Ingest call (GemmEx
  // added, its AllReduce not yet); one more pass sees everything that was ingested.
  diagnosis_->RunOnce();
  auto state = diagnosis_->Latest();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_EQ(state->jobs[0].ranks.size(), static_cast<size_t>(kRanks));
  HangCheckResponse r;
  FillHangCheck(*state, HangCheckRequest(), "node", &r);
  ASSERT_EQ(r.ranks_size(), kRanks);
  EXPECT_EQ(r.ranks(0).comms(0).members_size(), kRanks);
  EXPECT_EQ(r.ranks(0).recent_size(), 0) << "arrivals only when asked";
  HangCheckRequest with_arrivals;
  with_arrivals.set_arrivals(true);
  HangCheckResponse full;
  FillHangCheck(*state, with_arrivals, "node", &full);
  ASSERT_EQ(full.ranks_size(), kRanks);
  ASSERT_EQ(static_cast<size_t>(full.ranks(0).recent_size()),
            state->jobs[0].ranks[0].input.arrivals.size());
  ASSERT_GT(full.ranks(0).recent_size(), 0);
  const CollectiveArrival& last = full.ranks(0).recent(full.ranks(0).recent_size() - 1);
  EXPECT_EQ(last.state(), CollectiveArrival::completed);
  EXPECT_GE(last.end_age_s(), 0);
  EXPECT_GE(last.start_age_s(), last.end_age_s()) << "started before it ended";
  EXPECT_NE(r.ranks(0).last_activity().find("AllReduce on comm 0x0000000000000abc seq"),
            std::string::npos)
      << r.ranks(0).last_activity();
}

// HangCheck's enumerations spell what the analysis and the metrics spell: a verdict's kind as
// analysis::HangKindName, an exit cause as the `cause` label, a mismatch as the analysis's field.
TEST(WireEnumsTest, VerdictKindsExitCausesAndMismatchesSpellTheirSources) {
  for (int k = 1; k <= 6; ++k) {
    const auto kind = static_cast<analysis::HangKind>(k);
    EXPECT_EQ(VerdictKind::Value_Name(VerdictKindOf(kind)), analysis::HangKindName(kind)) << k;
  }
  EXPECT_EQ(VerdictKind::Value_descriptor()->value_count(), 7);  // the six and UNSPECIFIED
  for (format::ExitKind kind :
       {format::ExitKind::kNone, format::ExitKind::kExited, format::ExitKind::kSignal}) {
    EXPECT_EQ(ExitCauseCode::Value_Name(proto::ExitCauseCodeOf(kind)),
              format::ExitKindName(kind));
  }
  for (const char* field : {"op", "dtype", "count", "root"}) {
    MismatchField::Value v;
    EXPECT_TRUE(MismatchField::Value_Parse(field, &v)) << field;
  }
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

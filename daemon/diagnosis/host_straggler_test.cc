// The live diagnosis names what a straggler's host was doing: four ranks of one job through the
// Aggregator, rank 2's host keeps its GPU idle 100 ms before every step in a data-loader wait
// (a Python span: an NVTX range of the domain xtimer.python) with a GC pause inside it; the
// verdict's cause host names both from the process's NVTX history, and nothing without it;
// HangCheck carries those spans for `xtimer analyze --hosts`.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "analysis/host_spans.h"
#include "daemon/base/test_util.h"
#include "daemon/diagnosis/diagnosis.h"
#include "daemon/diagnosis/diagnosis_metrics.h"
#include "daemon/diagnosis/hang_check.h"
#include "daemon/model/aggregator.h"
#include "format/python_spans.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;

constexpr int64_t kSec = 1000000000;
constexpr int64_t kMs = 1000000;
constexpr int64_t kT0 = int64_t{1700000000} * kSec;
constexpr uint64_t kComm = 0xabc;
constexpr int kRanks = 4;
constexpr int kSteps = 20;
constexpr int kHostRank = 2;
// The Python spans' categories (format/python_spans.h).
constexpr uint32_t kGcSpan = static_cast<uint32_t>(format::PythonSpanKind::kGc);
constexpr uint32_t kData = static_cast<uint32_t>(format::PythonSpanKind::kData);


// NVTX string ids of the host rank's process.
constexpr uint32_t kDomain = 1, kLoader = 2, kGc = 3;

format::RecordSlot NvtxRange(uint32_t name, uint32_t category, int64_t start, int64_t end) {
  format::RecordSlot s;
  std::memset(&s, 0, sizeof(s));
  s.nvtx.version = format::kRecordVersion;
  s.nvtx.type = static_cast<uint8_t>(format::RecordType::kNvtx);
  s.nvtx.event = static_cast<uint8_t>(format::NvtxEvent::kRange);
  s.nvtx.tid = 77;
  s.nvtx.name_id = name;
  s.nvtx.domain_id = kDomain;
  s.nvtx.category = category;
  s.nvtx.start_ns = start;
  s.nvtx.end_ns = end;
  return s;
}

// The line of `text` that contains `needle`, or "".
std::string LineWith(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at);
  const size_t end = text.find('\n', at);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? std::string::npos : end - begin - 1);
}

class HostStragglerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    aggregator_ = std::make_unique<Aggregator>(AggregatorOptions(), kT0);
    diagnosis_ = std::make_unique<LiveDiagnosis>(aggregator_.get(), DiagnosisOptions(),
                                                 [this] { return now_; }, nullptr);
    for (int r = 0; r < kRanks; ++r) {
      format::Identity id;
      id.job = "train";
      id.host = "node";
      id.rank = r;
      id.local_rank = r;
      id.world_size = kRanks;
      ids_[r] = aggregator_->AddProcess(1000 + r, id);
      format::RecordSlot comm = testing::MakeComm(kComm, r, kRanks);
      comm.comm.global_rank = r;
      aggregator_->Ingest(ids_[r], &comm, 1, kT0);
    }
  }

  void Strings() {
    const std::vector<std::pair<uint32_t, std::string>> texts = {
        {kDomain, format::kPythonSpanDomain}, {kLoader, "m:Loader.__next__"}, {kGc, "gc gen2"}};
    for (const auto& t : texts) {
      format::RecordSlot s = format::NamePart(t.first, t.second, 0, format::RecordType::kNvtxString);
      aggregator_->Ingest(ids_[kHostRank], &s, 1, kT0);
    }
  }

  // Step `seq` at kT0 + seq s: a 400 ms GEMM, then the AllReduce; rank 2's GEMM starts 100 ms
  // late, its host in the data loader meanwhile (with `nvtx`), a 20 ms GC inside that.
  void Step(uint64_t seq, bool nvtx) {
    const int64_t t = kT0 + static_cast<int64_t>(seq) * kSec;
    const int64_t last = t + 500 * kMs;
    for (int r = 0; r < kRanks; ++r) {
      const int64_t begin = r == kHostRank ? t + 100 * kMs : t;
      std::vector<format::RecordSlot> recs(2);
      recs[0] = testing::MakeOp(Operation::kGemmEx, DType::kF32, 400 * kMs);
      recs[0].op.m = recs[0].op.n = recs[0].op.k = 1024;
      recs[0].op.cpu_launch_ns = begin - 1000;
      recs[0].op.gpu_start_ns = begin;
      recs[1] = testing::MakeOp(Operation::kAllReduce, DType::kF32, 0);
      format::OpRecord& ar = recs[1].op;
      ar.comm_id = kComm;
      ar.seq = seq;
      ar.comm_size = kRanks;
      ar.count = 1 << 20;
      ar.bytes = 4 << 20;
      ar.cpu_launch_ns = begin + 400 * kMs - 1000;
      ar.gpu_start_ns = begin + 400 * kMs;
      ar.duration_ns = last + 10 * kMs - ar.gpu_start_ns;
      if (r == kHostRank && nvtx) {
        recs.push_back(NvtxRange(kLoader, kData, t, t + 100 * kMs));
        recs.push_back(NvtxRange(kGc, kGcSpan, t + 10 * kMs, t + 30 * kMs));
      }
      aggregator_->Ingest(ids_[r], recs.data(), recs.size(), t + kSec / 2);
    }
  }

  const JobLive& Run(bool nvtx) {
    if (nvtx) Strings();
    for (uint64_t s = 1; s <= kSteps; ++s) Step(s, nvtx);
    now_ = kT0 + (kSteps + 1) * kSec;
    diagnosis_->RunOnce();
    state_ = diagnosis_->Latest();
    EXPECT_EQ(state_->jobs.size(), 1u);
    return state_->jobs.at(0);
  }

  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<LiveDiagnosis> diagnosis_;
  std::shared_ptr<const LiveState> state_;
  int64_t now_ = kT0;
  ProcessId ids_[kRanks] = {};
};

TEST_F(HostStragglerTest, NamesTheDataLoaderAndTheGcFromTheNvtxHistory) {
  const JobLive& job = Run(/*nvtx=*/true);
  ASSERT_FALSE(job.report.stragglers.empty());
  const analysis::Straggler& s = job.report.stragglers[0];
  EXPECT_EQ(s.rank, kHostRank);
  EXPECT_EQ(s.cause, analysis::Cause::kHost);
  ASSERT_EQ(s.host.size(), 2u);
  EXPECT_EQ(s.host[0].kind, "data_loading");
  EXPECT_EQ(s.host[0].text, "the data loader (m:Loader.__next__)");
  EXPECT_EQ(s.host[1].text, "GC generation 2");
  // Steps 2..20 have a gap before their AllReduce: 80 ms of loader and 20 ms of GC each.
  EXPECT_NEAR(s.host[0].seconds, (kSteps - 1) * 0.080, 0.001);
  EXPECT_NEAR(s.host[1].seconds, (kSteps - 1) * 0.020, 0.001);
  EXPECT_GT(s.host_idle_s, (kSteps - 1) * 0.5);
  // The published inputs keep the host straggler's spans (read again each pass) for HangCheck:
  // those of steps 2..20, after its first window's begin; the other ranks' none.
  for (const RankLive& r : job.ranks) {
    EXPECT_EQ(r.input.host_spans.size(), r.input.rank == kHostRank ? 2u * (kSteps - 1) : 0u);
  }
  // The metrics name them per straggler: 19 x 80 ms and 19 x 20 ms.
  const std::string m =
      prometheus::TextSerializer().Serialize(BuildDiagnosisFamilies(*state_));
  const std::string loader = LineWith(m, ",kind=\"data_loading\",name=\"m:Loader.__next__\"}");
  EXPECT_NE(loader.find("xtimer_straggler_host_seconds{"), std::string::npos) << m;
  EXPECT_NE(loader.find("rank=\"2\""), std::string::npos) << loader;
  EXPECT_NE(loader.find("comm=\"0x0000000000000abc\""), std::string::npos) << loader;
  EXPECT_NE(loader.find("} 1.52"), std::string::npos) << loader;
  EXPECT_NE(LineWith(m, ",kind=\"gc\",name=\"gc gen2\"}").find("} 0.38"), std::string::npos) << m;
}

// HangCheck with arrivals (`xtimer analyze --hosts`) carries those spans, as ages of its `now`,
// and each arrival's window begin, so that the CLI's analysis names them too; without arrivals
// it carries neither.
TEST_F(HostStragglerTest, HangCheckCarriesTheHostStragglersSpans) {
  Run(/*nvtx=*/true);
  for (bool arrivals : {true, false}) {
    HangCheckRequest request;
    request.set_arrivals(arrivals);
    HangCheckResponse answer;
    FillHangCheck(*state_, request, "node", &answer);
    ASSERT_EQ(answer.ranks_size(), kRanks);
    for (const RankProgress& p : answer.ranks()) {
      SCOPED_TRACE(p.rank());
      const bool host = arrivals && p.rank() == kHostRank;
      ASSERT_EQ(p.host_spans_size(), host ? 2 * (kSteps - 1) : 0);
      if (!host) continue;
      const HostSpan& loader = p.host_spans(0);
      EXPECT_EQ(loader.name(), "m:Loader.__next__");
      EXPECT_EQ(loader.domain(), format::kPythonSpanDomain);
      EXPECT_EQ(loader.category(), kData);
      // Step 2's loader ran [kT0 + 2 s, kT0 + 2.1 s]; `now` is kT0 + 21 s.
      EXPECT_NEAR(loader.start_age_s(), 19.0, 1e-6);
      EXPECT_NEAR(loader.end_age_s(), 18.9, 1e-6);
      ASSERT_EQ(p.recent_size(), kSteps);
      EXPECT_EQ(p.recent(0).gap_begin_age_s(), 0);  // its first collective has no window
      // Step 2's window begins at step 1's AllReduce end, kT0 + 1.51 s.
      EXPECT_NEAR(p.recent(1).gap_begin_age_s(), 19.49, 1e-6);
    }
  }
}

TEST_F(HostStragglerTest, WithoutNvtxTheVerdictNamesNothing) {
  const JobLive& job = Run(/*nvtx=*/false);
  ASSERT_FALSE(job.report.stragglers.empty());
  EXPECT_EQ(job.report.stragglers[0].rank, kHostRank);
  EXPECT_EQ(job.report.stragglers[0].cause, analysis::Cause::kHost);
  EXPECT_TRUE(job.report.stragglers[0].host.empty());
  const std::string m =
      prometheus::TextSerializer().Serialize(BuildDiagnosisFamilies(*state_));
  EXPECT_EQ(m.find("xtimer_straggler_host_seconds{"), std::string::npos) << m;
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

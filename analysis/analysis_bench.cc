// Analyze on a large synthetic job: 1,024 ranks (tp8 x dp128) x 10,000 collectives each (5,000
// steps of a tp and a dp AllReduce), one slow rank. Prints the measured seconds (wall and the
// process's CPU time, which a busy machine inflates less) and arrivals per second. Then the
// daemon's per-op cost of RankSummarizer (its live-diagnosis tap) on a world-1 rank whose
// collectives have no peers, and on a dp rank with 32 GEMMs between its all-reduces.
// Usage: analysis_bench [--steps N] [--tp N] [--dp N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "analysis/analysis.h"
#include "analysis/synthetic.h"
#include "format/record.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// CPU ns per op through RankSummarizer::Add: `steps` x (`gemms` GEMMs, a collective of
// `comm_size` members).
double SummarizerNsPerOp(int steps, int gemms, int comm_size) {
  using namespace xtimer;
  analysis::RankSummarizer summarizer;
  analysis::TimedOp op;
  int64_t t = 1000;
  size_t ops = 0, arrivals = 0;
  const double cpu0 = CpuSeconds();
  for (int s = 0; s < steps; ++s) {
    for (int g = 0; g <= gemms; ++g) {
      const bool coll = g == gemms;
      op.op = static_cast<uint16_t>(coll ? format::Operation::kAllReduce
                                         : format::Operation::kGemmEx);
      op.kind = format::KindOfOperation(op.op);
      op.comm_id = coll ? 7 : 0;
      op.seq = static_cast<uint64_t>(s + 1);
      op.comm_size = coll ? comm_size : 0;
      op.issue_ns = t;
      op.start_ns = t + 100;
      op.duration_ns = 900;
      t += 1000;
      analysis::Arrival a;
      arrivals += summarizer.Add(op, &a) ? 1 : 0;
      ++ops;
    }
  }
  const double cpu = CpuSeconds() - cpu0;
  if (arrivals != static_cast<size_t>(steps)) std::fprintf(stderr, "arrivals %zu\n", arrivals);
  return cpu * 1e9 / static_cast<double>(ops);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xtimer::analysis;
  SyntheticJob job;
  job.groups.tp = 8;
  job.groups.dp = 128;
  job.steps = 5000;
  job.slow_rank = 77;
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) job.steps = v;
    else if (!std::strcmp(argv[i], "--tp")) job.groups.tp = v;
    else if (!std::strcmp(argv[i], "--dp")) job.groups.dp = v;
    else {
      std::fprintf(stderr, "usage: analysis_bench [--steps N] [--tp N] [--dp N]\n");
      return 2;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<RankInput> ranks = MakeJob(job);
  auto t1 = std::chrono::steady_clock::now();
  size_t ops = 0;
  for (const RankInput& r : ranks) ops += r.arrivals.size();
  Options o;
  o.now_ns = JobEnd(ranks) + 1;
  o.has_groups = true;
  o.groups = job.groups;
  double cpu0 = CpuSeconds();
  Report report = Analyze(ranks, o);
  double cpu = CpuSeconds() - cpu0;
  auto t2 = std::chrono::steady_clock::now();
  double s = Seconds(t1, t2);
  std::printf("ranks %zu, collectives per rank %zu, arrivals %zu (input built in %.2f s)\n",
              ranks.size(), ranks.empty() ? 0 : ranks[0].arrivals.size(), ops, Seconds(t0, t1));
  std::printf("Analyze: %.3f s wall, %.3f s CPU (one thread), %.2f M arrivals/s (wall); %llu instances, %zu stragglers (first: rank %d "
              "%s), %zu hangs\n",
              s, cpu, ops / s / 1e6, static_cast<unsigned long long>(report.instances),
              report.stragglers.size(), report.stragglers.empty() ? -1 : report.stragglers[0].rank,
              report.stragglers.empty() ? "-" : CauseName(report.stragglers[0].cause),
              report.hangs.size());
  std::printf("RankSummarizer: %.0f ns/op on a world-1 rank (a GEMM, then an all-reduce without "
              "peers, 200k times); %.0f ns/op on a dp rank (32 GEMMs, then an all-reduce of 8, "
              "20k times)\n",
              SummarizerNsPerOp(200000, 1, 1), SummarizerNsPerOp(20000, 32, 8));
  return 0;
}

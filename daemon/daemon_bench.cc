// Measures the daemon's costs and prints them (docs/benchmarks.md, tools/bench/daemon_bench.sh):
//   ingest  records/s through real rings into the Aggregator on one core (thread CPU time)
//   load    CPU of the ring-reader thread (the real RingServer over a Unix socket) while
//           8 processes' rings each receive 10k records/s, over --seconds
//   scrape  /metrics latency through the real MetricsServer with 16 synthetic ranks
// Usage: daemon_bench [--seconds N] [--rate RECORDS_PER_RANK_PER_S] [--poll-ms M]
//                     [--only ingest|load|scrape]
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/aggregator.h"
#include "daemon/clock.h"
#include "daemon/metrics.h"
#include "daemon/metrics_server.h"
#include "daemon/ring_server.h"
#include "daemon/test_util.h"
#include "format/registration.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double CpuSecondsOf(pthread_t t) {
  clockid_t id;
  if (pthread_getcpuclockid(t, &id) != 0) return 0;
  timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

format::Identity Id(int rank) {
  format::Identity id;
  id.job = "bench";
  id.host = "node";
  id.pod = "pod";
  id.rank = rank;
  id.local_rank = rank % 8;
  id.world_size = 16;
  return id;
}

// A training-like mix: GEMMs of a few shapes, collectives, copies, a kernel.
std::vector<format::RecordSlot> Mix(int rank, int variants) {
  std::vector<format::RecordSlot> out;
  for (int v = 0; v < variants; ++v) {
    auto mm = MakeOp(v % 2 ? Operation::kGemmEx : Operation::kLtMatmul,
                     v % 3 ? DType::kBF16 : DType::kF16, 300000 + v * 1000);
    mm.op.m = 1024 << (v % 4);
    mm.op.n = 4096;
    mm.op.k = 1024;
    out.push_back(mm);
    auto ar = MakeOp(v % 2 ? Operation::kAllReduce : Operation::kAllGather, DType::kBF16,
                     800000 + v * 1000);
    ar.op.count = uint64_t{1} << (16 + v % 8);
    ar.op.bytes = ar.op.count * 2;
    ar.op.comm_size = 8;
    ar.op.comm_id = 0x1000 + v % 3;
    ar.op.seq = static_cast<uint64_t>(v);
    out.push_back(ar);
    auto cp = MakeOp(Operation::kMemcpyDtoD, DType::kUnknown, 20000 + v);
    cp.op.bytes = uint64_t{4096} << (v % 10);
    out.push_back(cp);
  }
  auto k = MakeOp(Operation::kKernelLaunch, DType::kUnknown, 5000 + rank);
  out.push_back(k);
  return out;
}

void BenchIngest() {
  constexpr int kRanks = 8;
  constexpr uint32_t kCapacity = 1 << 16;
  AggregatorOptions ao;
  Aggregator agg(ao, RealtimeNs());
  std::vector<format::RingWriter> writers;
  std::vector<format::RingReader> readers;
  std::vector<Aggregator::ProcessId> ids;
  for (int r = 0; r < kRanks; ++r) {
    std::string error;
    auto w = format::RingWriter::Create(kCapacity, Id(r), &error);
    auto rd = format::RingReader::Attach(w->fd(), &error);
    ids.push_back(agg.AddProcess(1000 + r, Id(r)));
    writers.push_back(std::move(*w));
    readers.push_back(std::move(*rd));
  }
  std::vector<format::RecordSlot> buffer(1024);
  double cpu = 0, wall = 0;
  uint64_t total = 0;
  for (int round = 0; round < 12; ++round) {
    for (int r = 0; r < kRanks; ++r) {
      auto mix = Mix(r, 8);
      for (uint32_t i = 0; i < kCapacity; ++i) {
        auto rec = mix[i % mix.size()];
        rec.op.seq = i;
        writers[r].Write(rec);
      }
    }
    const double c0 = ThreadCpuSeconds();
    const int64_t w0 = MonotonicNs();
    const int64_t now = RealtimeNs();
    format::ReadStats stats;
    for (int r = 0; r < kRanks; ++r) {
      size_t n;
      while ((n = readers[r].Read(buffer.data(), buffer.size(), &stats)) > 0) {
        agg.Ingest(ids[r], buffer.data(), n, now);
      }
    }
    if (round >= 2) {  // the first rounds warm the history rings and sample buffers
      cpu += ThreadCpuSeconds() - c0;
      wall += (MonotonicNs() - w0) * 1e-9;
      total += stats.records;
    }
  }
  printf("ingest: %.2f M records/s on one core (%llu records through 8 real rings into the "
         "aggregator, %.3f s CPU, %.0f ns/record)\n",
         total / cpu / 1e6, static_cast<unsigned long long>(total), cpu, cpu * 1e9 / total);
  (void)wall;
}

void BenchLoad(int seconds, int kRatePerRank, int poll_ms) {
  constexpr int kRanks = 8;
  const std::string dir = testing::MakeTempDir("daemon_bench");
  AggregatorOptions ao;
  Aggregator agg(ao, RealtimeNs());
  RingServerOptions so;
  so.socket_path = dir + "/xtimerd.sock";
  so.poll_interval_ms = poll_ms;
  RingServer server(so, &agg);
  std::string error;
  if (!server.Listen(&error)) {
    fprintf(stderr, "listen: %s\n", error.c_str());
    return;
  }
  std::atomic<bool> stop{false};
  std::thread reader([&] { server.Run(&stop); });

  std::atomic<bool> writers_stop{false};
  std::atomic<uint64_t> written{0}, dropped{0};
  std::vector<std::thread> writers;
  for (int r = 0; r < kRanks; ++r) {
    writers.emplace_back([&, r] {
      std::string err;
      auto w = format::RingWriter::Create(8192, Id(r), &err);
      int fd = format::ConnectToDaemon(so.socket_path, &err);
      format::SendRing(fd, w->fd(), &err);
      auto mix = Mix(r, 8);
      // 10 records every millisecond, paced against the clock.
      const int64_t start = MonotonicNs();
      uint64_t n = 0;
      format::InflightRow rows[2] = {{0x1000, 0, 0, 0}, {0, 0, 0, 0}};
      while (!writers_stop.load(std::memory_order_relaxed)) {
        const int64_t due = (MonotonicNs() - start) * kRatePerRank / 1000000000;
        while (static_cast<int64_t>(n) < due) {
          auto rec = mix[n % mix.size()];
          rec.op.seq = n;
          if (!w->Write(rec)) dropped.fetch_add(1);
          ++n;
        }
        if (n % 1000 < 10) {
          rows[0].last_issued_seq = rows[0].last_completed_seq = n;
          w->PublishInflight(rows, 2);
          w->Heartbeat(RealtimeNs());
        }
        usleep(1000);
      }
      written.fetch_add(n);
      close(fd);
    });
  }
  sleep(1);  // registrations settle
  // Cold: the first `seconds`, while per-process history rings and sample buffers fill (the
  // default 100000-record history takes 10 s to fill at 10k records/s). Warm: the next `seconds`.
  double cpu_phase[2], wall_phase[2];
  for (int phase = 0; phase < 2; ++phase) {
    const double c0 = CpuSecondsOf(reader.native_handle());
    const int64_t w0 = MonotonicNs();
    sleep(static_cast<unsigned>(seconds));
    cpu_phase[phase] = CpuSecondsOf(reader.native_handle()) - c0;
    wall_phase[phase] = (MonotonicNs() - w0) * 1e-9;
  }
  writers_stop = true;
  for (auto& t : writers) t.join();
  usleep(100000);
  stop = true;
  reader.join();
  printf("load: ring-reader thread CPU at %d ranks x %d records/s: %.2f%% of one core over the "
         "first %.1f s (history filling), %.2f%% over the next %.1f s (steady state); %llu "
         "records written, %llu dropped\n",
         kRanks, kRatePerRank, 100 * cpu_phase[0] / wall_phase[0], wall_phase[0],
         100 * cpu_phase[1] / wall_phase[1], wall_phase[1],
         static_cast<unsigned long long>(written.load()),
         static_cast<unsigned long long>(dropped.load()));
  testing::RemoveTree(dir);
}

void BenchScrape() {
  constexpr int kRanks = 16;
  AggregatorOptions ao;
  Aggregator agg(ao, RealtimeNs());
  const int64_t now = RealtimeNs();
  for (int r = 0; r < kRanks; ++r) {
    auto id = agg.AddProcess(1000 + r, Id(r));
    auto mix = Mix(r, 8);
    std::vector<format::RecordSlot> batch;
    for (int i = 0; i < 40000; ++i) {
      auto rec = mix[i % mix.size()];
      rec.op.duration_ns += i % 977;
      batch.push_back(rec);
    }
    agg.Ingest(id, batch.data(), batch.size(), now);
    ProcessStatus st;
    st.identity = Id(r);
    st.heartbeat_ns = now;
    st.inflight_valid = true;
    for (uint64_t c = 0; c < 4; ++c) st.inflight.push_back({0x1000 + c, 10, 9, now - 1000});
    agg.UpdateStatus(id, st);
  }
  auto collector = std::make_shared<MetricsCollector>(&agg, RealtimeNs);
  // Build + serialise alone.
  std::string text;
  const double c0 = ThreadCpuSeconds();
  constexpr int kBuilds = 20;
  for (int i = 0; i < kBuilds; ++i) {
    text = prometheus::TextSerializer().Serialize(collector->Collect());
  }
  const double build_ms = (ThreadCpuSeconds() - c0) * 1e3 / kBuilds;
  size_t series = 0;
  for (char c : text) series += c == '\n';
  MetricsServer server{MetricsServerOptions()};
  server.RegisterCollectable(collector);
  std::string error;
  const int port = server.Start(&error);
  if (port < 0) {
    fprintf(stderr, "scrape: %s\n", error.c_str());
    return;
  }
  std::vector<double> ms;
  size_t bytes = 0;
  for (int i = 0; i < 30; ++i) {
    const int64_t t0 = MonotonicNs();
    int status = 0;
    std::string body = testing::HttpGet(port, "/metrics", &status);
    ms.push_back((MonotonicNs() - t0) * 1e-6);
    bytes = body.size();
    if (status != 200) fprintf(stderr, "scrape failed\n");
  }
  std::sort(ms.begin(), ms.end());
  printf("scrape: %d ranks, %zu exposition lines, %zu bytes: GET /metrics median %.2f ms, max "
         "%.2f ms (collect+serialise %.2f ms CPU)\n",
         kRanks, series, bytes, ms[ms.size() / 2], ms.back(), build_ms);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

int main(int argc, char** argv) {
  int seconds = 10;
  int rate = 10000;
  int poll_ms = 5;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = atoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--rate" && i + 1 < argc) rate = atoi(argv[++i]);
    else if (a == "--poll-ms" && i + 1 < argc) poll_ms = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: daemon_bench [--seconds N] [--rate R] [--poll-ms M] [--only ingest|load|scrape]\n");
      return 2;
    }
  }
  if (only.empty() || only == "ingest") xtimer::daemon::BenchIngest();
  if (only.empty() || only == "scrape") xtimer::daemon::BenchScrape();
  if (only.empty() || only == "load") xtimer::daemon::BenchLoad(seconds, rate, poll_ms);
  return 0;
}

// Measures the daemon's costs and prints them (docs/benchmarks.md, tools/bench/daemon_bench.sh):
//   ingest  records/s through real rings into the Aggregator on one core (thread CPU time)
//   scrape  /metrics latency through the real MetricsServer with 16 synthetic ranks
//   load    CPU and page faults of the ring-reader thread (the real RingServer over a Unix
//           socket) while 8 writer processes' rings each receive 10k records/s, over --seconds
//   real    the same load against the real xtimerd binary (CPU and page faults of the whole
//           process from /proc), then /metrics latency with those 8 ranks
// Usage: daemon_bench [--seconds N] [--rate RECORDS_PER_RANK_PER_S] [--poll-ms M]
//                     [--xtimerd PATH] [--only ingest|scrape|load|real] [--op-log MODE]
// --op-log off|job|jsonl|csv: ingest and real run with the operation log (docs/oplog.md) in that
// mode (default off: no op tap, the daemon as before the op log); jsonl and csv log every rank.
// Exits 1 when a load figure could not be measured (a writer not registered, xtimerd absent).
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/base/test_util.h"
#include "daemon/dumps/op_log_writer.h"
#include "daemon/export/exposition.h"
#include "daemon/export/metrics.h"
#include "daemon/export/metrics_server.h"
#include "daemon/ingest/ring_server.h"
#include "daemon/model/aggregator.h"
#include "format/registration.h"
#include "format/ring.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

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

std::string g_op_log = "off";

void BenchIngest() {
  constexpr int kRanks = 8;
  constexpr uint32_t kCapacity = 1 << 16;
  AggregatorOptions ao;
  Aggregator agg(ao, RealtimeNs());
  const std::string op_log_dir = testing::MakeTempDir("bench-oplog");
  OpLogOptions oo;
  std::string error;
  if (!ParseOpLogMode(g_op_log, &oo.mode, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return;
  }
  oo.files.root = op_log_dir;
  oo.files.max_total_bytes = uint64_t{256} << 20;
  OpLogWriter op_log(&agg, oo, RealtimeNs, "bench");
  op_log.Start();
  std::vector<format::RingWriter> writers;
  std::vector<format::RingReader> readers;
  std::vector<ProcessId> ids;
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
         "aggregator, %.3f s CPU, %.0f ns/record; op log %s)\n",
         total / cpu / 1e6, static_cast<unsigned long long>(total), cpu, cpu * 1e9 / total,
         g_op_log.c_str());
  op_log.Stop();
  const OpLogCounters c = op_log.counters();
  if (oo.mode != OpLogMode::kOff) {
    printf("ingest: op log queued %llu ops, dropped %llu (queue full), wrote %llu lines\n",
           static_cast<unsigned long long>(c.queued),
           static_cast<unsigned long long>(c.queue_dropped),
           static_cast<unsigned long long>(c.written));
  }
  testing::RemoveTree(op_log_dir);
  (void)wall;
}

// The load's writers: one forked process per rank (distinct pids, as a job's ranks have; the
// daemon admits at most --max-registrations-per-pid (4) rings per process), each with a ring of
// the hook's default size. They share these counters with the bench through an anonymous
// shared mapping.
constexpr int kLoadRanks = 8;
constexpr uint32_t kLoadRing = 65536;

struct LoadShared {
  std::atomic<bool> stop{false};
  std::atomic<int> connected{0};
  std::atomic<uint64_t> written{0}, dropped{0};
};

LoadShared* MapLoadShared() {
  void* p = mmap(nullptr, sizeof(LoadShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) LoadShared();
}

// One rank: registers its ring on `socket` and writes `rate` records/s (paced in 1 ms ticks,
// with in-flight table and heartbeat updates) until shared->stop, then exits cleanly. Runs in a
// forked child.
void WriteLoad(const std::string& socket, int rank, int rate, LoadShared* shared) {
  std::string err;
  auto w = format::RingWriter::Create(kLoadRing, Id(rank), &err);
  const int fd = w.has_value() ? format::ConnectToDaemon(socket, &err) : -1;
  if (fd < 0 || !format::SendRing(fd, w->fd(), &err)) {
    fprintf(stderr, "load: rank %d could not register: %s\n", rank, err.c_str());
    return;
  }
  shared->connected.fetch_add(1);
  auto mix = Mix(rank, 8);
  const int64_t start = MonotonicNs();
  uint64_t n = 0, dropped = 0;
  format::InflightRow rows[2] = {{0x1000, 0, 0, 0}, {0, 0, 0, 0}};
  while (!shared->stop.load(std::memory_order_relaxed)) {
    const int64_t due = (MonotonicNs() - start) * rate / 1000000000;
    while (static_cast<int64_t>(n) < due) {
      auto rec = mix[n % mix.size()];
      rec.op.seq = n;
      if (!w->Write(rec)) ++dropped;
      ++n;
    }
    if (n % 1000 < 10) {
      rows[0].last_issued_seq = rows[0].last_completed_seq = n;
      w->PublishInflight(rows, 2);
      w->Heartbeat(RealtimeNs());
    }
    usleep(1000);
  }
  shared->written.fetch_add(n);
  shared->dropped.fetch_add(dropped);
  // A clean end, as the hook marks exit(0): without the marker the daemon sees the connection
  // lost, a failure, and writes the hang dump of the job's end.
  w->header()->exit_state.store(format::EncodeExitState(format::ExitKind::kExited, 0),
                                std::memory_order_release);
  close(fd);
}

std::vector<pid_t> SpawnWriters(const std::string& socket, int rate, LoadShared* shared) {
  std::vector<pid_t> pids;
  for (int r = 0; r < kLoadRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      WriteLoad(socket, r, rate, shared);
      _exit(0);
    }
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

void StopWriters(const std::vector<pid_t>& pids, LoadShared* shared) {
  shared->stop = true;
  for (pid_t pid : pids) testing::WaitExit(pid, 10000);
}

// CPU seconds (user + system) and minor page faults from a /proc/.../stat file.
struct ProcCost {
  double cpu_s = 0;
  uint64_t minflt = 0;
};

ProcCost ReadProcCost(const std::string& stat_path) {
  ProcCost out;
  const std::string text = testing::ReadFile(stat_path);
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return out;
  // Fields after "pid (comm)": 3 state ... 10 minflt ... 14 utime 15 stime.
  std::vector<std::string> f;
  size_t pos = paren + 2;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    f.push_back(text.substr(pos, sp - pos));
    pos = sp + 1;
  }
  if (f.size() < 13) return out;
  out.minflt = strtoull(f[7].c_str(), nullptr, 10);
  out.cpu_s = (strtod(f[11].c_str(), nullptr) + strtod(f[12].c_str(), nullptr)) /
              static_cast<double>(sysconf(_SC_CLK_TCK));
  return out;
}

// Two phases of `seconds` each (the first while the 100,000-record histories fill: 10 s at
// 10k records/s), measured by `sample` (CPU seconds and minor faults so far); prints them.
void MeasurePhases(const char* what, int seconds, int rate, const std::function<ProcCost()>& sample) {
  const char* names[2] = {"first", "next"};
  for (int phase = 0; phase < 2; ++phase) {
    const ProcCost c0 = sample();
    const int64_t w0 = MonotonicNs();
    sleep(static_cast<unsigned>(seconds));
    const ProcCost c1 = sample();
    const double wall = (MonotonicNs() - w0) * 1e-9;
    printf("%s at %d ranks x %d records/s, %s %.1f s%s: %.2f%% of one core, %.0f minor faults/s\n",
           what, kLoadRanks, rate, names[phase], wall,
           phase == 0 ? " (histories filling)" : " (steady state)",
           100 * (c1.cpu_s - c0.cpu_s) / wall, (c1.minflt - c0.minflt) / wall);
  }
}

// The ring-reader thread of an in-process RingServer (CPU from its thread clock, page faults
// from its /proc task). False when not every writer registered.
bool BenchLoad(int seconds, int rate, int poll_ms) {
  const std::string dir = testing::MakeTempDir("daemon_bench");
  AggregatorOptions ao;
  Aggregator agg(ao, RealtimeNs());
  RingServerOptions so;
  so.socket_path = dir + "/xtimerd.sock";
  so.poll_interval_ms = poll_ms;
  RingServer server(so, &agg);
  std::string error;
  LoadShared* shared = MapLoadShared();
  if (shared == nullptr || !server.Listen(&error)) {
    fprintf(stderr, "load: %s\n", error.c_str());
    return false;
  }
  // Forked before any thread starts; their connections wait in the listen backlog.
  const std::vector<pid_t> pids = SpawnWriters(so.socket_path, rate, shared);
  std::atomic<bool> stop{false};
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    server.Run(&stop);
  });
  const bool all = testing::WaitFor([&] { return server.registered() == kLoadRanks; }, 30000);
  printf("load: %zu of %d writer processes registered\n", server.registered(), kLoadRanks);
  if (all) {
    const std::string stat = "/proc/self/task/" + std::to_string(tid.load()) + "/stat";
    MeasurePhases("load: ring-reader thread", seconds, rate, [&] {
      ProcCost c = ReadProcCost(stat);
      c.cpu_s = CpuSecondsOf(reader.native_handle());  // finer than clock ticks
      return c;
    });
  }
  StopWriters(pids, shared);
  stop = true;
  reader.join();
  printf("load: %llu records written, %llu dropped by full rings; %llu history chunks "
         "allocated, %llu memory returns\n",
         static_cast<unsigned long long>(shared->written.load()),
         static_cast<unsigned long long>(shared->dropped.load()),
         static_cast<unsigned long long>(agg.history_chunks_allocated()),
         static_cast<unsigned long long>(agg.memory_returns()));
  testing::RemoveTree(dir);
  return all;
}

// GET /metrics against a running daemon: median and max of 30, in ms, and the daemon's CPU time
// and minor page faults per scrape (its load included, which the caller measured apart).
void ScrapeTimes(int port, const std::string& stat_path, const char* what) {
  constexpr int kScrapes = 30;
  std::vector<double> ms;
  size_t bytes = 0;
  const ProcCost c0 = ReadProcCost(stat_path);
  for (int i = 0; i < kScrapes; ++i) {
    const int64_t t0 = MonotonicNs();
    int status = 0;
    bytes = testing::HttpGet(port, "/metrics", &status).size();
    ms.push_back((MonotonicNs() - t0) * 1e-6);
    if (status != 200) fprintf(stderr, "scrape failed\n");
  }
  const ProcCost c1 = ReadProcCost(stat_path);
  std::sort(ms.begin(), ms.end());
  printf("%s: GET /metrics (%zu bytes) median %.2f ms, max %.2f ms; daemon %.1f ms CPU and %.0f "
         "minor faults per scrape\n",
         what, bytes, ms[ms.size() / 2], ms.back(), (c1.cpu_s - c0.cpu_s) * 1e3 / kScrapes,
         static_cast<double>(c1.minflt - c0.minflt) / kScrapes);
}

// A field of /proc/PID/status in kB (VmRSS, RssAnon), -1 when absent.
int64_t StatusKb(const std::string& status_path, const char* field) {
  const std::string text = testing::ReadFile(status_path);
  const size_t at = text.find(std::string(field) + ":");
  return at == std::string::npos ? -1 : atoll(text.c_str() + at + strlen(field) + 1);
}

void PrintRss(const std::string& status_path, const char* what) {
  printf("%s: %.1f MiB (anon %.1f MiB)\n", what, StatusKb(status_path, "VmRSS") / 1024.0,
         StatusKb(status_path, "RssAnon") / 1024.0);
}

// Resident kB per mapping name in /proc/PID/smaps: a file's path, "[heap]", "[stack]", or
// "[anon]" for unnamed anonymous mappings (thread stacks, malloc's arenas and mmaps).
std::map<std::string, int64_t> RssByMapping(const std::string& smaps_path) {
  std::map<std::string, int64_t> kb;
  for (const testing::Mapping& m : testing::ResidentMappings(smaps_path)) {
    kb[m.name.empty() ? "[anon]" : m.name] += m.rss_kb;
  }
  return kb;
}

// The mappings whose resident size grew by 64 kB or more between two RssByMapping readings.
void PrintRssGrowth(const std::map<std::string, int64_t>& before,
                    const std::map<std::string, int64_t>& after, const char* what) {
  for (const auto& [name, kb] : after) {
    auto b = before.find(name);
    const int64_t grown = kb - (b == before.end() ? 0 : b->second);
    if (grown >= 64) printf("%s: +%lld kB in %s\n", what, static_cast<long long>(grown), name.c_str());
  }
}

constexpr int kRealGraceS = 2;  // --exited-grace of the real daemon

// After the writers left: waits for their grace to end, then prints RSS 5, 10 and 30 s later.
bool MeasureReturn(int port, const std::string& status_path,
                   const std::map<std::string, int64_t>& idle_rss) {
  auto exited = [&] {
    int code = 0;
    const std::string body = testing::HttpGet(port, "/metrics", &code);
    return code == 200 ? testing::Sample(body, "xtimer_processes_exited") +
                             testing::Sample(body, "xtimer_processes_registered")
                       : -1;
  };
  if (!testing::WaitFor([&] { return exited() == 0; }, 30000)) {
    fprintf(stderr, "real: the exited ranks were not dropped after their grace\n");
    return false;
  }
  int waited = 0;
  for (int at : {5, 10, 30}) {
    sleep(static_cast<unsigned>(at - waited));
    waited = at;
    const std::string what = "real: RSS " + std::to_string(at) + " s after the grace ended";
    PrintRss(status_path, what.c_str());
  }
  const std::string smaps = status_path.substr(0, status_path.rfind('/')) + "/smaps";
  PrintRssGrowth(idle_rss, RssByMapping(smaps), "real: resident since idle");
  return true;
}

// The real xtimerd (default flags, a temporary run directory, free ports) under the same load:
// CPU and minor faults of the whole process from /proc/PID/stat, then /metrics while loaded.
bool BenchReal(const std::string& xtimerd, int seconds, int rate) {
  const std::string dir = testing::MakeTempDir("daemon_bench_real");
  const int port = testing::FreePort();
  const pid_t daemon = testing::Spawn(
      {xtimerd, "--run-dir=" + dir, "--metrics-port=" + std::to_string(port), "--control-port=0",
       "--dump-root=" + dir + "/dumps", "--exited-grace=" + std::to_string(kRealGraceS),
       "--op-log=" + g_op_log},
      dir + "/xtimerd.log");
  auto registered = [&] {
    int status = 0;
    const std::string body = testing::HttpGet(port, "/metrics", &status);
    return status == 200 ? testing::Sample(body, "xtimer_processes_registered") : -1;
  };
  bool ok = testing::WaitFor([&] { return registered() == 0; }, 30000);
  usleep(500000);
  PrintRss("/proc/" + std::to_string(daemon) + "/status", "real: RSS idle (started, scraped)");
  const auto idle_rss = RssByMapping("/proc/" + std::to_string(daemon) + "/smaps");
  LoadShared* shared = MapLoadShared();
  std::vector<pid_t> pids;
  if (ok && shared != nullptr) {
    pids = SpawnWriters(dir + "/xtimerd.sock", rate, shared);
    ok = testing::WaitFor([&] { return registered() == kLoadRanks; }, 30000);
    printf("real: %.0f of %d writer processes registered (xtimerd pid %d)\n", registered(),
           kLoadRanks, static_cast<int>(daemon));
  } else {
    fprintf(stderr, "real: %s did not start (log: %s/xtimerd.log)\n", xtimerd.c_str(),
            dir.c_str());
  }
  const std::string status = "/proc/" + std::to_string(daemon) + "/status";
  if (ok) {
    const std::string stat = "/proc/" + std::to_string(daemon) + "/stat";
    MeasurePhases("real: xtimerd", seconds, rate, [&] { return ReadProcCost(stat); });
    ScrapeTimes(port, stat, "real: loaded, 8 ranks");
    PrintRss(status, "real: RSS loaded");
  }
  if (shared != nullptr) StopWriters(pids, shared);
  if (ok) ok = MeasureReturn(port, status, idle_rss);
  kill(daemon, SIGTERM);
  testing::WaitExit(daemon, 10000);
  if (shared != nullptr) {
    printf("real: %llu records written, %llu dropped by full rings\n",
           static_cast<unsigned long long>(shared->written.load()),
           static_cast<unsigned long long>(shared->dropped.load()));
  }
  if (ok) testing::RemoveTree(dir);
  return ok;
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
  // Build + serialise alone, as the metrics server does (into a reused buffer), and with
  // prometheus-cpp's TextSerializer (as before 2026-11-25).
  std::string text;
  constexpr int kBuilds = 20;
  double c0 = ThreadCpuSeconds();
  for (int i = 0; i < kBuilds; ++i) {
    text.clear();
    AppendExposition(collector->Collect(), &text);
  }
  const double build_ms = (ThreadCpuSeconds() - c0) * 1e3 / kBuilds;
  c0 = ThreadCpuSeconds();
  for (int i = 0; i < kBuilds; ++i) {
    const std::string old = prometheus::TextSerializer().Serialize(collector->Collect());
  }
  const double old_build_ms = (ThreadCpuSeconds() - c0) * 1e3 / kBuilds;
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
         "%.2f ms (collect+serialise %.2f ms CPU; %.2f ms with prometheus-cpp's TextSerializer)\n",
         kRanks, series, bytes, ms[ms.size() / 2], ms.back(), build_ms, old_build_ms);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

int main(int argc, char** argv) {
  int seconds = 10;
  int rate = 10000;
  int poll_ms = 5;
  std::string only;
  // xtimerd is built beside this binary (a data dependency).
  std::string xtimerd = xtimer::daemon::SelfDir() + "/xtimerd";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = atoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--rate" && i + 1 < argc) rate = atoi(argv[++i]);
    else if (a == "--poll-ms" && i + 1 < argc) poll_ms = atoi(argv[++i]);
    else if (a == "--xtimerd" && i + 1 < argc) xtimerd = argv[++i];
    else if (a == "--op-log" && i + 1 < argc) xtimer::daemon::g_op_log = argv[++i];
    else {
      fprintf(stderr, "usage: daemon_bench [--seconds N] [--rate R] [--poll-ms M] "
                      "[--xtimerd PATH] [--only ingest|scrape|load|real] [--op-log MODE]\n");
      return 2;
    }
  }
  xtimer::daemon::SetMallocPolicy();  // as xtimerd's main does
  bool ok = true;
  if (only.empty() || only == "ingest") xtimer::daemon::BenchIngest();
  if (only.empty() || only == "scrape") xtimer::daemon::BenchScrape();
  if (only.empty() || only == "load") ok = xtimer::daemon::BenchLoad(seconds, rate, poll_ms) && ok;
  if (only.empty() || only == "real") ok = xtimer::daemon::BenchReal(xtimerd, seconds, rate) && ok;
  if (!ok) fprintf(stderr, "daemon_bench: a load figure is missing (see above)\n");
  return ok ? 0 : 1;
}

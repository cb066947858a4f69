// Converter benchmark: 64 ranks x ~50k events (synthetic job on 8 nodes), converted with one
// worker (events/s per core) and with all workers: default (compressed), plain (uncompressed) and
// lean (--no-args --no-launches).
//   bazel run -c opt //timeline:timeline_bench -- [ranks] [events_per_rank] [dir]
// Clock alignment at scale: many nodes, converted with alignment on and with --no-align, each in
// a child process whose CPU time and peak RSS are measured (wait4), so that neither the
// generator's memory nor the other mode's counts.
//   bazel run -c opt //timeline:timeline_bench -- --scale [nodes] [ranks_per_node] [steps] [dir]
// With `dir` the job is written there and kept (node0 .. nodeN-1, and the last mode's trace), for
// profiling one conversion with heaptrack or for checking a large trace.
#include <ftw.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "timeline/converter.h"
#include "timeline/synthetic_job.h"

namespace {

using xtimer::timeline::ConvertOptions;
using xtimer::timeline::ConvertStats;
using xtimer::timeline::ConvertTimelines;
using xtimer::timeline::SyntheticJob;
using xtimer::timeline::WriteSyntheticJob;

// Runs fn in a child process; returns its exit status and fills its CPU seconds and peak RSS.
template <typename Fn>
int InChild(Fn fn, double* cpu_s, long* max_rss_kb) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int rc = fn();
    std::fflush(stdout);
    std::_Exit(rc);
  }
  int status = 0;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return -1;
  *cpu_s = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  *max_rss_kb = ru.ru_maxrss;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) { return remove(path); }

int ScaleMain(int nodes, int per_node, int steps, const char* keep_dir) {
  char tmpl[] = "/tmp/xtimer_align_bench.XXXXXX";
  if (keep_dir == nullptr && mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = keep_dir != nullptr ? keep_dir : tmpl;
  SyntheticJob job;
  job.ranks = nodes * per_node;
  job.nodes = nodes;
  job.steps = steps;
  job.seed = 7;
  for (int n = 0; n < nodes; ++n) job.node_skew_ns.push_back((n * 7919 % 2001 - 1000) * 1000);
  std::printf("generating %d nodes x %d ranks x %d steps in %s ...\n", nodes, per_node, steps,
              dir.c_str());
  double cpu = 0;
  long rss = 0;
  if (InChild([&] {
        std::string error;
        if (WriteSyntheticJob(job, dir, &error).empty()) {
          std::fprintf(stderr, "%s\n", error.c_str());
          return 1;
        }
        return 0;
      }, &cpu, &rss) != 0) {
    return 1;
  }
  std::vector<std::string> dirs;
  for (int n = 0; n < nodes; ++n) dirs.push_back(dir + "/node" + std::to_string(n));
  double cpu_mode[2] = {0, 0};
  long rss_mode[2] = {0, 0};
  for (int align = 1; align >= 0; --align) {
    int rc = InChild([&] {
      ConvertOptions opt;
      opt.inputs = dirs;
      opt.output = dir + "/bench.pftrace";
      opt.jobs = 1;
      opt.quiet = true;
      opt.align_clocks = align != 0;
      ConvertStats st;
      std::string error;
      if (!ConvertTimelines(opt, &st, &error, stderr)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
      }
      std::printf("%-10s %d ranks, %llu events, %llu alignment entries, wall %.2f s, "
                  "trace %.1f MB\n",
                  align ? "align" : "--no-align", st.ranks,
                  static_cast<unsigned long long>(st.events),
                  static_cast<unsigned long long>(st.align_entries), st.seconds,
                  st.trace_bytes / 1e6);
      return 0;
    }, &cpu_mode[align], &rss_mode[align]);
    if (rc != 0) return 1;
    std::printf("%-10s cpu %.2f s, peak RSS %.1f MB\n", align ? "align" : "--no-align",
                cpu_mode[align], rss_mode[align] / 1024.0);
  }
  std::printf("alignment on vs --no-align: cpu %+.1f %% (%+.2f s), peak RSS %+.1f %% (%+.1f MB)\n",
              100.0 * (cpu_mode[1] - cpu_mode[0]) / cpu_mode[0], cpu_mode[1] - cpu_mode[0],
              100.0 * (rss_mode[1] - rss_mode[0]) / rss_mode[0],
              (rss_mode[1] - rss_mode[0]) / 1024.0);
  if (keep_dir == nullptr) nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xtimer::timeline;
  if (argc > 1 && std::string(argv[1]) == "--scale") {
    return ScaleMain(argc > 2 ? std::atoi(argv[2]) : 1024, argc > 3 ? std::atoi(argv[3]) : 8,
                     argc > 4 ? std::atoi(argv[4]) : 20, argc > 5 ? argv[5] : nullptr);
  }
  int ranks = argc > 1 ? std::atoi(argv[1]) : 64;
  int events = argc > 2 ? std::atoi(argv[2]) : 50000;
  std::string dir = argc > 3 ? argv[3] : "/tmp/xtimer_timeline_bench";
  SyntheticJob job;
  job.ranks = ranks;
  job.nodes = 8;
  job.steps = events / 8;  // 8 events per rank per step
  job.seed = 1;
  job.node_skew_ns = {0, 1000000, -2000000, 300000, 0, 7000, -50000, 123456};
  std::string error;
  std::printf("generating %d ranks x %d events in %s ...\n", ranks, job.steps * 8, dir.c_str());
  std::fflush(stdout);
  auto dirs = WriteSyntheticJob(job, dir, &error);
  if (dirs.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  // default: all arguments, launches and flows, compressed packets (level 1); plain: the same
  // uncompressed; lean: --no-args --no-launches.
  struct Mode {
    const char* name;
    bool lean;
    int level;
    int jobs;
  } modes[] = {{"default", false, 1, 1}, {"default", false, 1, hw}, {"plain", false, 0, 1},
               {"lean", true, 1, 1},     {"lean", true, 1, hw}};
  for (const Mode& m : modes) {
    ConvertOptions opt;
    opt.inputs = dirs;
    opt.output = dir + "/bench.pftrace";
    opt.jobs = m.jobs;
    opt.quiet = true;
    opt.args = !m.lean;
    opt.launches = !m.lean;
    opt.compression_level = m.level;
    ConvertStats st;
    auto cpu = [] {
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
             (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    };
    double cpu0 = cpu();
    if (!ConvertTimelines(opt, &st, &error, stderr)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    double cpu_s = cpu() - cpu0;
    double eps = st.events / st.seconds;
    // Per core = events per CPU-second (user + system, all threads): robust on a shared machine.
    std::printf(
        "%-8s jobs=%-3d %llu events: wall %.2f s (%.2f M events/s), cpu %.2f s "
        "(%.2f M events/s per core), %.1f bytes/event, trace %.1f MB\n",
        m.name, m.jobs, static_cast<unsigned long long>(st.events), st.seconds, eps / 1e6, cpu_s,
        st.events / cpu_s / 1e6, static_cast<double>(st.trace_bytes) / st.events,
        st.trace_bytes / 1e6);
    std::fflush(stdout);
  }
  return 0;
}

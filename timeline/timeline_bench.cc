// Converter benchmark: 64 ranks x ~50k events (synthetic job on 8 nodes), converted with one
// worker (events/s per core) and with all workers: default (compressed), plain (uncompressed) and
// lean (--no-args --no-launches).
//   bazel run -c opt //timeline:timeline_bench -- [ranks] [events_per_rank] [dir]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "timeline/converter.h"
#include "timeline/synthetic_job.h"

int main(int argc, char** argv) {
  using namespace xtimer::timeline;
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

// xtimer diff A B: per operation signature, what changed between two dumps (see --help).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/diff_report.h"
#include "cli/readers/job_inputs.h"
#include "cli/op_diff.h"
#include "cli/readers/op_table.h"
#include "util/split.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "diff";  // for BadArg (cli/args.h)

constexpr char kUsage[] = R"HELP(usage: xtimer diff A B [options]

Compares two dumps, A (before, or healthy) and B (after, or slow): A and B are each a directory
of timeline files, a dump path of job folders, or a comma-separated list of node directories
(as `xtimer timeline` reads them). What got slower: per operation signature (operation or
kernel name, GEMM shape m x n x k or bytes, dtype, communicator size) the calls in each, the
mean duration, the change of the mean, and the throughput at the mean (GEMM TFLOPS; collectives
and send/recv bus GB/s as nccl-tests counts it; copies and sets GB/s), sorted by the
impact on step time: the change in time per rank, (mean B - mean A) x calls in B / ranks in B;
the largest slowdown first. An operation only in B counts with its whole time; one only in A with
minus its time in A. Waiting is left out: a collective's duration is its transfer, the shortest
duration among its calls (the last to arrive waits for nobody); a send and its receive are one
transfer (row "Send/Recv"), counted once, lasting the shorter of the two. Host synchronisations
are left out. Who: each rank's own work (computation, copies, kernels) in A and B; the ranks
whose own work grew beyond the other ranks' by 2% or more (ops whose change stands out from the
median rank's, or new on few ranks) are named with those ops.

)HELP";

constexpr char kAfter[] = R"HELP(exit status: 0 done, 1 a dump could not be read, 2 bad arguments (also: --job names none of the
jobs: they are listed), 3 done but some files were (partly) unreadable or left out (another
job's, or their world size disagrees with the job's; listed on stderr).
)HELP";

}  // namespace

int DiffMain(int argc, char** argv) {
  std::vector<std::string> dumps;
  std::string job[2];
  bool json = false;
  int jobs = 0;
  int64_t top = -1;
  CommandLine cl;
  cl.Switch("--json", &json,
            "print JSON: {\"a\": {...}, \"b\": {...}, \"ops\": [...], \"ranks\": [...]} "
            "(docs/analyze-cli.md)");
  cl.Integer("--top", 1, 1000000, &top, "print only the first N rows (default: all)");
  cl.Custom("--job", "NAME", [&job](const std::string& t, std::string*) {
    job[0] = job[1] = t;
    return true;
  }, ("in A and in B: " + JobFlagHelp()).c_str());
  cl.Text("--job-a", &job[0], "the same for A alone (two runs have two job labels)")
      .Placeholder("NAME");
  cl.Text("--job-b", &job[1], "the same for B alone").Placeholder("NAME");
  cl.Integer("-j,--jobs", 1, 1024, &jobs, "reader threads (default: all hardware threads)");
  cl.Positionals(&dumps);
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  if (dumps.size() != 2) return BadArg(kCommand, "give two dumps, A and B");
  OpTable tables[2];
  for (int d = 0; d < 2; ++d) {
    std::string error;
    JobFiles files;
    if (!SelectJobFiles(SplitList(dumps[d], ','), job[d], jobs, &files, &error)) {
      return BadArg(kCommand, std::string(d == 0 ? "A" : "B") + ": " + error);
    }
    const bool read = ReadOpTable(PathsOf(files.files), jobs, &tables[d], &error);
    std::vector<std::string>& problems = tables[d].problems;
    problems.insert(problems.begin(), files.problems.begin(), files.problems.end());
    if (!read) {
      std::fprintf(stderr, "xtimer diff: %s: %s\n", d == 0 ? "A" : "B", error.c_str());
      for (const std::string& p : files.problems) std::fprintf(stderr, "  %s\n", p.c_str());
      return 1;
    }
  }
  DiffReport report;
  report.a = &tables[0];
  report.b = &tables[1];
  report.rows = DiffTables(tables[0], tables[1]);
  report.ranks = DiffRanks(tables[0], tables[1]);
  report.top = top < 0 ? static_cast<size_t>(-1) : static_cast<size_t>(top);
  std::fputs((json ? DiffJson(report) : DiffText(report)).c_str(), stdout);
  bool partial = false;
  for (int d = 0; d < 2; ++d) {
    for (const std::string& p : tables[d].problems) {
      std::fprintf(stderr, "xtimer diff: %s: %s\n", d == 0 ? "A" : "B", p.c_str());
      partial = true;
    }
  }
  return partial ? 3 : 0;
}

}  // namespace cli
}  // namespace xtimer

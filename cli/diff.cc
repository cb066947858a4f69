// xtimer diff A B: per operation signature, what changed between two dumps (see --help).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/job_inputs.h"
#include "cli/op_table.h"
#include "format/record.h"
#include "util/json.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kHelp[] = R"HELP(usage: xtimer diff A B [options]

Compares two dumps, A (before, or healthy) and B (after, or slow): A and B are each a directory
of timeline files, a dump path of job folders, or a comma-separated list of node directories
(as `xtimer timeline` reads them). Per operation signature (operation or kernel name, GEMM shape
m x n x k or bytes, dtype, communicator size) it prints the calls in each, the median duration,
the throughput at the median (GEMM TFLOPS; collectives and send/recv bus GB/s as nccl-tests
counts it; copies and sets GB/s) and the change, sorted by the impact on step time: the change
in time per rank, (mean B - mean A) x calls in B / ranks in B; the largest slowdown first.
An operation only in B counts with its whole time; one only in A with minus its time in A.
Communication's duration is its transfer: the shortest duration among the calls of each
collective, or of each send/recv pair (the last to arrive waits for nobody), so waiting for a
late rank does not make communication look slower. Host synchronisations are left out.

options:
  --json            print JSON: {"a": {...}, "b": {...}, "ops": [...]} (docs/analyze-cli.md)
  --top N           print only the first N rows (default: all)
  --job NAME        only this job's files, in A and in B: needed when a dump holds several
                    jobs (the job label of the files), which are never merged
  --job-a NAME, --job-b NAME
                    the same for A or B alone (two runs have two job labels)
  -j, --jobs N      reader threads (default: all hardware threads)
  -h, --help        this text
  --version         print the version and exit

exit status: 0 done, 1 a dump could not be read, 2 bad arguments (also: a dump holds several
jobs and no --job, or --job names none of them: the jobs are listed), 3 done but some files were
(partly) unreadable or left out (their world size disagrees with the job's; listed on stderr).
)HELP";

int BadArg(const std::string& m) {
  std::fprintf(stderr, "xtimer diff: %s (see xtimer diff --help)\n", m.c_str());
  return 2;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.6g", std::isfinite(v) ? v : 0.0);
  return b;
}

std::string Change(const DiffRow& r) {
  if (r.a.count == 0) return "new";
  if (r.b.count == 0) return "gone";
  char b[32];
  std::snprintf(b, sizeof(b), "%+.1f%%", (r.b.median_s / r.a.median_s - 1) * 100);
  return b;
}

void PrintTable(const std::vector<DiffRow>& rows, const OpTable& a, const OpTable& b, size_t top) {
  std::printf("A: %d ranks, %llu events; B: %d ranks, %llu events\n", a.ranks,
              static_cast<unsigned long long>(a.events), b.ranks,
              static_cast<unsigned long long>(b.events));
  std::printf("%12s  %-22s %-16s %-6s %5s %9s %9s %11s %11s %8s %17s\n", "impact ms/rank",
              "op", "shape/bytes", "dtype", "n", "calls A", "calls B", "median A us",
              "median B us", "change", "throughput A -> B");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const DiffRow& r = rows[i];
    const OpSignature& s = r.signature;
    std::string tp;
    if (*r.unit) {
      char b[64];
      std::snprintf(b, sizeof(b), "%.4g -> %.4g %s", r.a.throughput, r.b.throughput, r.unit);
      tp = b;
    }
    std::printf("%+14.3f  %-22.22s %-16s %-6s %5s %9llu %9llu %11.1f %11.1f %8s %s\n",
                r.impact_s * 1e3, s.name.c_str(), s.Shape().c_str(),
                s.dtype ? format::DTypeName(static_cast<format::DType>(s.dtype)) : "-",
                s.comm_size ? std::to_string(s.comm_size).c_str() : "-",
                static_cast<unsigned long long>(r.a.count),
                static_cast<unsigned long long>(r.b.count), r.a.median_s * 1e6,
                r.b.median_s * 1e6, Change(r).c_str(), tp.c_str());
  }
}

std::string StatsJson(const OpStats& s) {
  return "{\"count\": " + std::to_string(s.count) + ", \"median_s\": " + Num(s.median_s) +
         ", \"mean_s\": " + Num(s.mean_s) +
         ", \"throughput\": " + Num(s.throughput) + "}";
}

void PrintJson(const std::vector<DiffRow>& rows, const OpTable& a, const OpTable& b, size_t top) {
  auto dump = [](const OpTable& t) {
    return "{\"ranks\": " + std::to_string(t.ranks) + ", \"events\": " + std::to_string(t.events) +
           "}";
  };
  std::string out = "{\"a\": " + dump(a) + ", \"b\": " + dump(b) + ", \"ops\": [";
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const DiffRow& r = rows[i];
    const OpSignature& s = r.signature;
    out += i ? ",\n  " : "\n  ";
    out += "{\"op\": " + JsonQuote(s.name) + ", \"kind\": " +
           JsonQuote(format::OpKindName(static_cast<format::OpKind>(s.kind))) +
           ", \"shape\": " + JsonQuote(s.Shape()) + ", \"m\": " + std::to_string(s.m) +
           ", \"n\": " + std::to_string(s.n) + ", \"k\": " + std::to_string(s.k) +
           ", \"batch\": " + std::to_string(s.batch) + ", \"bytes\": " + std::to_string(s.bytes) +
           ", \"dtype\": " + JsonQuote(format::DTypeName(static_cast<format::DType>(s.dtype))) +
           ", \"comm_size\": " + std::to_string(s.comm_size) + ", \"unit\": " + JsonQuote(r.unit) +
           ", \"a\": " + StatsJson(r.a) + ", \"b\": " + StatsJson(r.b) +
           ", \"impact_s_per_rank\": " + Num(r.impact_s) + "}";
  }
  out += "\n]}\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int DiffMain(int argc, char** argv) {
  std::vector<std::string> dumps;
  std::string job[2];
  bool json = false;
  int jobs = 0;
  size_t top = static_cast<size_t>(-1);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto number = [&](const std::string& name, long lo, long hi, long* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      *out = std::strtol(argv[++i], &end, 10);
      return *argv[i] && !*end && *out >= lo && *out <= hi;
    };
    long n = 0;
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("%s\n", kVersion);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--top") {
      if (!number(a, 1, 1000000, &n)) return BadArg("--top needs a number from 1 to 1000000");
      top = static_cast<size_t>(n);
    } else if (a == "--job" || a == "--job-a" || a == "--job-b") {
      if (i + 1 >= argc || !*argv[i + 1]) return BadArg(a + " needs a job name");
      ++i;
      if (a != "--job-b") job[0] = argv[i];
      if (a != "--job-a") job[1] = argv[i];
    } else if (a == "-j" || a == "--jobs") {
      if (!number(a, 1, 1024, &n)) return BadArg(a + " needs a number from 1 to 1024");
      jobs = static_cast<int>(n);
    } else if (!a.empty() && a[0] == '-') {
      return BadArg("unknown option '" + a + "'");
    } else {
      dumps.push_back(a);
    }
  }
  if (dumps.size() != 2) return BadArg("give two dumps, A and B");
  OpTable tables[2];
  for (int d = 0; d < 2; ++d) {
    std::string error;
    JobFiles files;
    if (!SelectJobFiles(SplitList(dumps[d]), job[d], jobs, &files, &error)) {
      return BadArg(std::string(d == 0 ? "A" : "B") + ": " + error);
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
  const std::vector<DiffRow> rows = DiffTables(tables[0], tables[1]);
  if (json) {
    PrintJson(rows, tables[0], tables[1], top);
  } else {
    PrintTable(rows, tables[0], tables[1], top);
  }
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

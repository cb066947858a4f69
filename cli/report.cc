// xtimer report DIR... -o report.html: one self-contained HTML report of a dump (see --help and
// docs/report.md). Reads as `xtimer analyze` reads (cli/readers/dump_reader.h) and as `xtimer diff` reads
// (cli/readers/op_table.h); the page is written by report/report_html.h.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/steps.h"
#include "cli/args.h"
#include "cli/analysis_args.h"
#include "cli/commands.h"
#include "cli/readers/dump_reader.h"
#include "cli/readers/file_reads.h"
#include "cli/op_diff.h"
#include "cli/readers/op_table.h"
#include "cli/report_cost.h"
#include "cli/readers/stacks_input.h"
#include "format/record.h"
#include "opmath/op_math.h"
#include "report/report_html.h"
#include "util/kernel_name.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "report";  // for BadArg (cli/args.h)

constexpr char kUsage[] = R"HELP(usage: xtimer report DIR... -o report.html [options]

Writes one self-contained HTML file (inline SVG charts, no script, nothing fetched when it is
viewed) about a dump: each rank's step time (where known) and matmul FLOP/s, observed and true
bus bandwidth per communicator, the slowest operations by signature, the diagnosis of `xtimer
analyze` (hang verdicts, stragglers and their cause, with their evidence), and relative links to
the Perfetto traces (*.pftrace) and flame graphs (stacks.svg) found in the dump's folders.
docs/report.md describes every section.

DIR... are read as `xtimer analyze` reads them: node directories of timeline files, a dump path
holding job folders, single .timeline files, and the hang-summary-<host>.json files beside them.

)HELP";

constexpr char kAfter[] = R"HELP(exit status: 0 written, 1 nothing could be read or the file could not be written, 2 bad
arguments (also: --job names none of the jobs: they are listed), 3 written but the input is
partial: ranks of the world have no data, files are (partly) unreadable or were left out
(another job's, among others; each is named on stderr and in the report).
)HELP";

struct Args : DumpArgs {
  std::string out, groups_text;
  int64_t top = 25;
  analysis::Options options;
};

// Returns -1 when the arguments are good, else the exit status.
int ParseReportArgs(int argc, char** argv, Args* a) {
  CommandLine cl;
  cl.Text("-o,--out", &a->out, "the HTML file to write (required); its folder must exist")
      .Placeholder("FILE");
  AddGroupsFlag(&a->options.groups, &a->groups_text, "as for xtimer analyze", &cl);
  cl.Integer("--top", 1, 1000000, &a->top,
             ("rows of the slowest-operations table " + DefaultIs(a->top)).c_str());
  double hang_timeout_s = 0;
  AddHangTimeoutFlag(&hang_timeout_s, &cl);
  AddDumpArgs(a, "", &cl);
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  a->options.has_groups = !a->groups_text.empty();
  ApplyHangTimeout(hang_timeout_s, &a->options);
  if (a->inputs.empty()) return BadArg(kCommand, "no dump directory");
  if (a->out.empty()) return BadArg(kCommand, "no output file: give -o report.html");
  return -1;
}

void Note(const Args& a, const std::string& m) {
  if (!a.quiet) std::fprintf(stderr, "xtimer report: %s\n", m.c_str());
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// What the report is made of: the analysis input (as `xtimer analyze` reads it) and the op table
// of the same files (as `xtimer diff` makes it), from one pass over each file's events.
struct Inputs {
  DumpInput dump;
  std::vector<std::string> problems;
};

// Returns -1 when something was read, else the exit status.
int Read(const Args& a, Inputs* in) {
  std::string error;
  Note(a, "reading the dump for the diagnosis and the op table");
  DumpReadOptions options = ReadOptionsOf(a);
  options.op_table = true;
  const FileReads before = FileReadsSoFar();
  if (!ReadDump(options, &in->dump, &error)) {
    if (in->dump.wrong_job) return BadArg(kCommand, error);
    std::fprintf(stderr, "xtimer report: %s\n", error.c_str());
    return 1;
  }
  const uint64_t passes = FileReadsSoFar().event_passes - before.event_passes;
  Note(a, "read " + std::to_string(in->dump.files) + " timeline file(s), " +
              std::to_string(passes) + " pass(es) over their events");
  for (const std::string& n : in->dump.notes) Note(a, "note: " + n);
  in->problems = in->dump.problems;
  if (!in->dump.missing.empty()) {
    std::string list;
    for (size_t i = 0; i < in->dump.missing.size() && i < 32; ++i)
      list += (i ? " " : "") + std::to_string(in->dump.missing[i]);
    if (in->dump.missing.size() > 32) list += " ...";
    in->problems.push_back(std::to_string(in->dump.missing.size()) +
                           " rank(s) of the world have no data (" + list +
                           "): give every node's directory");
  }
  return -1;
}

// A rank's matmul FLOP per second of GPU time (opmath's FLOP of each signature); 0 without any.
double MatmulFlops(const std::map<OpSignature, RankWork>& own) {
  double flop = 0, ns = 0;
  for (const auto& kv : own) {
    if (kv.first.kind != static_cast<uint8_t>(format::OpKind::kMatmul)) continue;
    flop += opmath::MatmulFlop(kv.first.m, kv.first.n, kv.first.k, kv.first.batch) *
            static_cast<double>(kv.second.count);
    ns += kv.second.total_ns;
  }
  return ns > 0 ? flop / ns * 1e9 : 0;
}

std::vector<report::RankRow> RankRows(const Inputs& in) {
  std::vector<report::RankRow> rows;
  for (const analysis::RankInput& r : in.dump.ranks) {
    report::RankRow row;
    row.rank = r.rank;
    row.node = r.node;
    const analysis::RankSteps steps = analysis::StepsOf(r.marked_step_starts_ns, r.arrivals);
    row.step_s = steps.median_s;
    row.step_marked = steps.marked;
    row.collectives_per_step = steps.guess.per_step;
    auto it = in.dump.table.own.find(r.rank);
    if (it != in.dump.table.own.end()) row.matmul_flops = MatmulFlops(it->second);
    rows.push_back(row);
  }
  return rows;
}

// The signatures with the most total time, at most `top`.
std::vector<report::OpRow> OpRows(const OpTable& table, size_t top) {
  std::vector<report::OpRow> rows;
  for (const auto& kv : table.durations) {
    const OpStats st = StatsOf(kv.first, table);
    if (st.count == 0) continue;
    report::OpRow r;
    r.name = util::ShortKernelName(kv.first.name);
    if (r.name != kv.first.name) r.signature = kv.first.name;
    r.shape = kv.first.Shape();
    r.dtype = format::DTypeName(static_cast<format::DType>(kv.first.dtype));
    r.unit = UnitOf(kv.first);
    r.count = st.count;
    r.mean_s = st.mean_s;
    r.median_s = st.median_s;
    r.p90_s = st.p90_s;
    r.total_s = st.mean_s * static_cast<double>(st.count);
    r.throughput = st.throughput;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const report::OpRow& x, const report::OpRow& y) {
    return x.total_s > y.total_s;
  });
  if (rows.size() > top) rows.resize(top);
  return rows;
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? buf : "";
}

// `to` relative to the directory `from` (both absolute, normalized).
std::string RelativeTo(const std::string& from, const std::string& to) {
  auto split = [](const std::string& p) {
    std::vector<std::string> parts;
    size_t i = 0;
    while (i < p.size()) {
      size_t j = p.find('/', i);
      if (j == std::string::npos) j = p.size();
      if (j > i) parts.push_back(p.substr(i, j - i));
      i = j + 1;
    }
    return parts;
  };
  const std::vector<std::string> f = split(from), t = split(to);
  size_t common = 0;
  while (common < f.size() && common < t.size() && f[common] == t[common]) ++common;
  std::string out;
  for (size_t i = common; i < f.size(); ++i) out += "../";
  for (size_t i = common; i < t.size(); ++i) out += (i > common ? "/" : "") + t[i];
  return out;
}

bool IsRegular(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The Perfetto traces and flame graphs in `dir` (files, not symlinks): *.pftrace,
// *.perfetto-trace, stacks.svg, and SUB/stacks.svg one folder down (xtimer stacks -o DIR/SUB).
void LinksIn(const std::string& dir, std::vector<std::pair<std::string, std::string>>* found) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name, path = dir + "/" + name;
    if (name == "." || name == "..") continue;
    if ((EndsWith(name, ".pftrace") || EndsWith(name, ".perfetto-trace")) && IsRegular(path)) {
      found->push_back({"Perfetto trace", path});
    } else if (name == "stacks.svg" && IsRegular(path)) {
      found->push_back({"flame graph", path});
    } else if (IsDirectory(path) && IsRegular(path + "/stacks.svg")) {
      found->push_back({"flame graph", path + "/stacks.svg"});
    }
  }
  closedir(d);
}

std::vector<report::Link> FindLinks(const Args& a, const DumpInput& dump) {
  std::set<std::string> dirs;
  for (const std::string& i : a.inputs) {
    if (IsDirectory(i)) dirs.insert(RealPath(i));
  }
  for (const std::string& p : dump.paths) dirs.insert(RealPath(Dirname(p)));
  std::vector<std::pair<std::string, std::string>> found;
  for (const std::string& d : dirs) {
    if (!d.empty()) LinksIn(d, &found);
  }
  const std::string from = RealPath(Dirname(a.out));
  std::set<std::string> seen;
  std::vector<report::Link> links;
  for (const auto& f : found) {
    const std::string real = RealPath(f.second);
    if (real.empty() || from.empty() || !seen.insert(real).second) continue;
    links.push_back({f.first, RelativeTo(from, real)});
  }
  std::sort(links.begin(), links.end(), [](const report::Link& x, const report::Link& y) {
    return x.label != y.label ? x.label > y.label : x.path < y.path;
  });
  return links;
}

bool WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(("xtimer report: " + path).c_str());
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    std::perror(("xtimer report: writing " + path).c_str());
    return false;
  }
  return true;
}

std::string Summary(const Inputs& in) {
  const DumpInput& d = in.dump;
  return "Read " + std::to_string(d.files) + " timeline file(s) (" + std::to_string(d.events) +
         " events) and " + std::to_string(d.summaries) + " hang summary(ies): " +
         std::to_string(d.ranks.size()) + " of " + std::to_string(d.world) + " ranks, " +
         std::to_string(d.offsets.size()) + " node(s).";
}

}  // namespace

int ReportMain(int argc, char** argv) {
  Args a;
  int rc = ParseReportArgs(argc, argv, &a);
  if (rc >= 0) return rc;
  Inputs in;
  rc = Read(a, &in);
  if (rc >= 0) return rc;
  analysis::Options opt = a.options;
  opt.now_ns = in.dump.now_ns;
  int world = in.dump.world;
  for (const analysis::RankInput& r : in.dump.ranks) world = std::max(world, r.rank + 1);
  if (opt.has_groups) {
    const int bad = CheckGroupsWorld(kCommand, a.groups_text, opt.groups, world);
    if (bad >= 0) return bad;
  }
  Note(a, "analysing " + std::to_string(in.dump.ranks.size()) + " rank(s)");
  report::ReportPage page;
  page.analysis = analysis::Analyze(in.dump.ranks, opt);
  AddCulpritStacks(a.inputs, in.dump.job, world, &page.analysis);  // as analyze's evidence
  page.job = in.dump.job;
  page.version = kVersion;
  page.summary = Summary(in);
  page.problems = in.problems;
  page.ranks = RankRows(in);
  page.ops = OpRows(in.dump.table, static_cast<size_t>(a.top));
  page.ops_total = in.dump.table.durations.size();
  page.links = FindLinks(a, in.dump);
  page.cost = HookCostRows(in.dump.metadata, &page.cost_unknown);
  if (!WriteFile(a.out, report::ReportHtml(page))) return 1;
  Note(a, "wrote " + a.out);
  for (const std::string& p : in.problems) {
    std::fprintf(stderr, "xtimer report: partial: %s\n", p.c_str());
  }
  return in.problems.empty() ? 0 : 3;
}

}  // namespace cli
}  // namespace xtimer

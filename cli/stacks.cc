// xtimer stacks DIR... -o OUT/: see --help and docs/stacks.md.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "cli/commands.h"
#include "cli/job_inputs.h"
#include "cli/parallel_for.h"
#include "stacktrace/flamegraph_svg.h"
#include "stacktrace/merge.h"
#include "stacktrace/stacks_file.h"
#include "stacktrace/summary.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

namespace st = stacktrace;

constexpr char kHelp[] = R"HELP(usage: xtimer stacks DIR... -o OUT/ [options]

Reads the per-rank stack files (*.stacks, docs/stacks.md) found in each DIR and its
subdirectories (one directory per node; a .stacks file may also be named directly) and merges
the stacks of all ranks into one tree of frames: thread name -> outermost frame -> ... ->
innermost frame, each frame carrying the set of ranks whose stacks pass through it. Writes:
  OUT/stacks.folded   folded stacks for flamegraph.pl and speedscope: one line per stack end,
                      "thread NAME;outer;...;inner [ranks 0-2,4-7] COUNT", COUNT = ranks
  OUT/stacks.svg      a flame graph (open in a browser): widths are rank counts; hover a frame
                      for its module, line and ranks; click to zoom; Search highlights frames
  OUT/summary.txt     ranks grouped by identical main-thread stacks, the biggest group first;
                      the other groups are outliers, named with their innermost frames
and prints the summary.

options:
  -o, --output DIR    the output directory (created if missing; required)
  --job NAME          only this job's files: needed when the inputs hold several jobs
  --groups LAYOUT     parallel layout, e.g. tp2-pp2-dp2 (sizes multiply to the world size):
                      outlier groups are named with their pipeline stages and the parallel
                      group (tp, cp, ep, dp, pp) their ranks form, if any
  --json              print the summary as JSON (summary.txt is still text)
  --top N             frames named per group in the summary (default 3)
  -j, --jobs N        reader threads (default: all hardware threads)
  -q, --quiet         print only errors (not the summary)
  -h, --help          this text
  --version           print the version and exit

exit status: 0 written, 1 no readable stack file, 2 bad arguments (also: several jobs and no
--job), 3 written but partial: files unreadable or left out (named on stderr), or ranks of the
world without a file (listed in the summary).
)HELP";

int BadArg(const std::string& message) {
  std::fprintf(stderr, "xtimer stacks: %s (see xtimer stacks --help)\n", message.c_str());
  return 2;
}

struct Options {
  std::vector<std::string> inputs;
  std::string output, job, groups;
  bool json = false, quiet = false;
  int top = 3, jobs = 0;
};

bool HasSuffix(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// *.stacks under `dir`, recursively (symbolic links are not followed; 16 levels at most).
void FindStacks(const std::string& dir, int depth, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr || depth > 16) {
    if (d) closedir(d);
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    std::string path = dir + "/" + n;
    struct stat s;
    if (lstat(path.c_str(), &s) != 0) continue;
    if (S_ISDIR(s.st_mode)) FindStacks(path, depth + 1, out);
    if (S_ISREG(s.st_mode) && HasSuffix(n, st::kStacksSuffix)) out->push_back(path);
  }
}

std::vector<std::string> ListInputs(const std::vector<std::string>& inputs,
                                    std::vector<std::string>* problems) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    struct stat s;
    size_t before = files.size();
    if (stat(in.c_str(), &s) != 0) {
      problems->push_back(in + ": " + std::strerror(errno));
      continue;
    }
    if (S_ISREG(s.st_mode)) {
      files.push_back(in);
    } else {
      FindStacks(in, 0, &files);
    }
    if (files.size() == before) problems->push_back(in + ": no *.stacks files");
  }
  return files;
}

// Reads and parses one file; false with *error ("why") on failure. Reads at most
// kMaxFileBytes + 1 bytes, so a huge file costs no more.
bool ReadStacks(const std::string& path, st::StacksFile* out, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return *error = std::strerror(errno), false;
  struct stat s;
  if (fstat(fd, &s) != 0 || static_cast<uint64_t>(s.st_size) > st::kMaxFileBytes) {
    close(fd);
    *error = "larger than " + std::to_string(st::kMaxFileBytes >> 20) + " MiB";
    return false;
  }
  std::string text(static_cast<size_t>(s.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(got);
  return st::ParseStacksJson(text, out, error);
}

struct Inputs {
  std::vector<st::StacksFile> ranks;  // the chosen job's, ascending by rank, one per rank
  int world = 0;
  std::vector<std::string> problems;  // "path: why"
};

// Picks the job (refusing several without --job) and the agreed world size; leaves out the
// files of other world sizes and repeated ranks. False with *error on a bad --job.
bool SelectRanks(std::vector<st::StacksFile>* parsed, const std::vector<std::string>& paths,
                 const std::string& job_flag, Inputs* in, std::string* error) {
  std::map<std::string, int> jobs;
  for (const st::StacksFile& f : *parsed) {
    if (f.world_size > 0) ++jobs[f.job];
  }
  std::string job = job_flag;
  if (job.empty() && jobs.size() > 1) {
    *error = "the inputs hold several jobs:";
    for (const auto& j : jobs) *error += " '" + j.first + "' (" + std::to_string(j.second) + ")";
    *error += "; choose one with --job NAME";
    return false;
  }
  if (job.empty() && !jobs.empty()) job = jobs.begin()->first;
  if (!jobs.empty() && !jobs.count(job)) return *error = "no files of job '" + job + "'", false;
  std::vector<int> sizes;
  for (const st::StacksFile& f : *parsed) {
    if (f.world_size > 0 && f.job == job) sizes.push_back(f.world_size);
  }
  in->world = AgreedWorld(sizes);
  std::vector<size_t> order;
  for (size_t i = 0; i < parsed->size(); ++i) {
    const st::StacksFile& f = (*parsed)[i];
    if (f.world_size == 0 || f.job != job) continue;  // unreadable, or another job's
    if (f.world_size != in->world) {
      in->problems.push_back(paths[i] + ": world size " + std::to_string(f.world_size) +
                             ", but most files say " + std::to_string(in->world) + ": left out");
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return (*parsed)[a].rank < (*parsed)[b].rank; });
  for (size_t i : order) {
    if (!in->ranks.empty() && in->ranks.back().rank == (*parsed)[i].rank) {
      in->problems.push_back(paths[i] + ": rank " + std::to_string((*parsed)[i].rank) +
                             " again (another file has it): left out");
      continue;
    }
    in->ranks.push_back(std::move((*parsed)[i]));
  }
  return true;
}

// What --groups says about an outlier group's ranks: their pipeline stages, and the parallel
// group they form exactly (if any).
std::string DescribeRanks(const analysis::Groups& g, const std::vector<int32_t>& ranks) {
  std::set<int> stages;
  for (int32_t r : ranks) stages.insert(analysis::PipelineStage(g, r));
  std::string out = stages.size() == 1 ? "pp stage " : "pp stages ";
  std::vector<int32_t> list(stages.begin(), stages.end());
  out += st::RankRanges(list);
  std::string kind = analysis::GroupKindOf(g, ranks);
  if (!kind.empty()) out += "; the ranks form one " + kind + " group";
  return out;
}

bool WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "xtimer stacks: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "xtimer stacks: cannot write %s\n", path.c_str());
  return ok;
}

int ParseArgs(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string name = a.rfind("--", 0) == 0 ? a.substr(0, a.find('=')) : a;
    auto value = [&](std::string* out) {
      if (name.size() < a.size()) return *out = a.substr(name.size() + 1), true;
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto number = [&](long lo, long hi, int* out) {
      std::string v;
      char* end = nullptr;
      long n = value(&v) ? std::strtol(v.c_str(), &end, 10) : lo - 1;
      if (v.empty() || *end != '\0' || n < lo || n > hi) {
        return BadArg(name + " needs a number from " + std::to_string(lo) + " to " +
                      std::to_string(hi)), false;
      }
      return *out = static_cast<int>(n), true;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("%s\n", kVersion);
      return 0;
    } else if (name == "-o" || name == "--output") {
      if (!value(&opt->output) || opt->output.empty()) return BadArg(name + " needs a directory");
    } else if (name == "--job") {
      if (!value(&opt->job) || opt->job.empty()) return BadArg("--job needs a job name");
    } else if (name == "--groups") {
      if (!value(&opt->groups)) return BadArg("--groups needs a layout such as tp2-pp2-dp2");
    } else if (name == "--top") {
      if (!number(1, 1024, &opt->top)) return 2;
    } else if (name == "-j" || name == "--jobs") {
      if (!number(1, 1024, &opt->jobs)) return 2;
    } else if (a == "--json") {
      opt->json = true;
    } else if (a == "-q" || a == "--quiet") {
      opt->quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return BadArg("unknown option '" + a + "'");
    } else {
      opt->inputs.push_back(a);
    }
  }
  if (opt->inputs.empty()) return BadArg("no input directory");
  if (opt->output.empty()) return BadArg("no output directory: give -o OUT/");
  return -1;
}

// Reads every input file on opt.jobs threads and selects the job's ranks.
int ReadInputs(const Options& opt, Inputs* in) {
  std::vector<std::string> paths = ListInputs(opt.inputs, &in->problems);
  std::vector<st::StacksFile> parsed(paths.size());
  std::vector<std::string> errors(paths.size());
  ParallelFor(paths.size(), opt.jobs, [&](size_t i) {
    if (!ReadStacks(paths[i], &parsed[i], &errors[i])) parsed[i] = st::StacksFile();
  });
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!errors[i].empty()) in->problems.push_back(paths[i] + ": " + errors[i] + ": skipped");
  }
  std::string error;
  if (!SelectRanks(&parsed, paths, opt.job, in, &error)) return BadArg(error);
  return -1;
}

int Write(const Options& opt, const st::StackTree& tree, const st::SummaryInput& summary,
          const std::string& title) {
  if (mkdir(opt.output.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "xtimer stacks: cannot create %s: %s\n", opt.output.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::string text = st::SummaryText(summary);
  if (!WriteFile(opt.output + "/stacks.folded", st::FoldedStacks(tree)) ||
      !WriteFile(opt.output + "/stacks.svg", st::FlameGraphSvg(tree, title)) ||
      !WriteFile(opt.output + "/summary.txt", text)) {
    return 1;
  }
  if (opt.json) {
    std::fputs(st::SummaryJson(summary).c_str(), stdout);
  } else if (!opt.quiet) {
    std::fputs(text.c_str(), stdout);
  }
  return -1;
}

}  // namespace

int StacksMain(int argc, char** argv) {
  Options opt;
  int rc = ParseArgs(argc, argv, &opt);
  if (rc >= 0) return rc;
  Inputs in;
  if ((rc = ReadInputs(opt, &in)) >= 0) return rc;
  for (const std::string& p : in.problems) std::fprintf(stderr, "skipped %s\n", p.c_str());
  if (in.ranks.empty()) {
    std::fprintf(stderr, "xtimer stacks: no readable stack file in the inputs\n");
    return 1;
  }
  analysis::Groups groups;
  std::string error;
  if (!opt.groups.empty() && !analysis::ParseGroups(opt.groups, &groups, &error)) {
    return BadArg("--groups: " + error);
  }
  if (!opt.groups.empty() && groups.world() != in.world) {
    return BadArg("--groups " + opt.groups + " has " + std::to_string(groups.world()) +
                  " ranks, but the world size is " + std::to_string(in.world));
  }
  st::StackTree tree;
  for (const st::StacksFile& f : in.ranks) tree.AddRank(f);
  st::SummaryInput summary;
  summary.tree = &tree;
  summary.world_size = in.world;
  summary.problems = in.problems;
  summary.top_frames = opt.top;
  for (int32_t r = 0, k = 0; r < in.world; ++r) {
    if (k < static_cast<int>(tree.ranks().size()) && tree.ranks()[k] == r) ++k;
    else summary.missing_ranks.push_back(r);
  }
  if (!opt.groups.empty()) {
    summary.describe = [&](const std::vector<int32_t>& r) { return DescribeRanks(groups, r); };
  }
  std::string title = "xtimer stacks: job " + in.ranks[0].job + ", " +
                      std::to_string(tree.ranks().size()) + " of " + std::to_string(in.world) +
                      " ranks";
  if ((rc = Write(opt, tree, summary, title)) >= 0) return rc;
  return in.problems.empty() && summary.missing_ranks.empty() ? 0 : 3;
}

}  // namespace cli
}  // namespace xtimer

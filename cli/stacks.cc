// xtimer stacks DIR... -o OUT/: see --help and docs/stacks.md.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "analysis/analysis.h"
#include "cli/args.h"
#include "cli/analysis_args.h"
#include "cli/commands.h"
#include "cli/control_client.h"
#include "cli/readers/job_inputs.h"
#include "util/parallel_for.h"
#include "cli/readers/stacks_input.h"
#include "proto/hosting.grpc.pb.h"
#include "stacktrace/flamegraph_svg.h"
#include "stacktrace/frame_owner.h"
#include "stacktrace/merge.h"
#include "stacktrace/stack_merger.h"
#include "stacktrace/stacks_file.h"
#include "stacktrace/summary.h"
#include "util/process_name.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "stacks";  // for BadArg (cli/args.h)

namespace st = stacktrace;

constexpr char kUsage[] = R"HELP(usage: xtimer stacks DIR... -o OUT/ [options]
       xtimer stacks --hosts HOST:PORT,... -o OUT/ [options]

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

With --hosts, asks every node's xtimerd at once (DumpStack) for the stacks of its ranks, which
each daemon also keeps in <dump root>/--path/<job>/; the files come back over the control port
into OUT/nodes/<node>/<job>/ and are merged as above.

)HELP";

constexpr char kAfter[] = R"HELP(exit status: 0 written, 1 no readable stack file (or, with --hosts, no node answered), 2 bad
arguments (also: a --job no file has), 3 written but partial: files unreadable or left out
(another job's among them), nodes that did not answer (named on stderr), ranks of the world
without a file (listed in the summary), or a limit of the merge or an output reached
(docs/stacks.md "Limits").
)HELP";

struct Options {
  std::vector<std::string> inputs;
  std::string output, job, groups;  // groups: --groups as given, parsed into group_layout
  analysis::Groups group_layout;
  bool json = false, quiet = false, show_xtimer = false;
  int top = 3, jobs = 0;
  std::vector<std::string> hosts;  // --hosts: ask the daemons instead of reading DIRs
  std::string hosts_file, path;
  std::vector<int> ranks;
  double timeout_s = 2;
};

// The longest --timeout: what the daemon allows a DumpStack request.
constexpr double kMaxTimeoutS = 30;

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

struct Inputs {
  // The chosen job's files, ascending by rank, one per rank, then its processes without a rank
  // (world size -1) by host, pid and device, whose `rank` is then their member number
  // (st::kFirstProcessMember + k): their identity (no frames or threads: those are in the
  // merger) and their numbers in the merger.
  std::vector<st::StacksFile> ranks;
  std::vector<size_t> files;
  int world = 0;
  std::vector<std::string> problems;  // "path: why"
};

// "rank 3", or "node-a:pid-4242" for a process without a rank.
std::string MemberName(const st::StacksFile& f) {
  return st::HasRank(f) ? "rank " + std::to_string(f.rank)
                        : RanklessProcessName(f.host, f.pid, f.device);
}

// Whose stacks a file holds, in member order: a rank, or (after all ranks) a process without a
// rank by host, pid and device.
std::tuple<bool, int32_t, std::string, int64_t, int32_t> MemberKey(const st::StacksFile& f) {
  if (st::HasRank(f)) return std::make_tuple(false, f.rank, std::string(), int64_t{0}, 0);
  return std::make_tuple(true, 0, f.host, f.pid, f.device);
}

// The files of `order` sorted by member, into in->files; a member's second file is left out.
void KeepOnePerMember(const std::vector<st::StacksFile>& parsed,
                      const std::vector<std::string>& paths, std::vector<size_t> order,
                      Inputs* in) {
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return MemberKey(parsed[a]) < MemberKey(parsed[b]);
  });
  for (size_t i : order) {
    const st::StacksFile& f = parsed[i];
    if (!in->files.empty() && MemberKey(parsed[in->files.back()]) == MemberKey(f)) {
      in->problems.push_back(paths[i] + ": " + MemberName(f) +
                             " again (another file has it): left out");
      continue;
    }
    in->files.push_back(i);
  }
}

// Picks the job (--job, else the one with the most files, ties by name: as cli/readers/job_inputs.h does
// for timelines; the others' files are left out and named) and the agreed world size; leaves out
// the files of other world sizes and repeated ranks. False with *error on a bad --job.
bool SelectRanks(std::vector<st::StacksFile>* parsed, const std::vector<std::string>& paths,
                 const std::string& job_flag, Inputs* in, std::string* error) {
  std::map<std::string, int> jobs;
  for (const st::StacksFile& f : *parsed) {
    if (f.world_size != 0) ++jobs[f.job];  // readable
  }
  std::string job = job_flag;
  if (job.empty() && !jobs.empty()) {
    job = jobs.begin()->first;
    for (const auto& j : jobs) {
      if (j.second > jobs[job]) job = j.first;
    }
  }
  if (job_flag.empty() && jobs.size() > 1) {
    std::string others;
    for (const auto& j : jobs) {
      if (j.first != job) others += " '" + j.first + "' (" + std::to_string(j.second) + ")";
    }
    in->problems.push_back("the inputs hold " + std::to_string(jobs.size()) +
                           " jobs, never merged: read '" + job +
                           "' (most files); left out the files of" + others +
                           "; choose one with --job NAME");
  }
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
    if (st::HasRank(f) && f.world_size != in->world) {
      in->problems.push_back(paths[i] + ": world size " + std::to_string(f.world_size) +
                             ", but most files say " + std::to_string(in->world) + ": left out");
      continue;
    }
    order.push_back(i);
  }
  KeepOnePerMember(*parsed, paths, order, in);
  for (size_t i : in->files) in->ranks.push_back(std::move((*parsed)[i]));
  for (size_t k = 0, i = 0; i < in->ranks.size(); ++i) {
    if (!st::HasRank(in->ranks[i])) in->ranks[i].rank = st::kFirstProcessMember + k++;
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

// --ranks 0,3,5: each a rank; appended to *ranks.
CommandLine::Setter RankList(std::vector<int>* ranks) {
  return [ranks](const std::string& t, std::string* expected) {
    for (const std::string& r : SplitList(t, ',')) {
      int64_t n = 0;
      if (!ParseInteger(r, 0, (1 << 24) - 1, &n)) {
        *expected = "a list of ranks like 0,3,5 ('" + r + "' is no rank)";
        return false;
      }
      ranks->push_back(static_cast<int>(n));
    }
    return true;
  };
}

int ParseStacksArgs(int argc, char** argv, Options* opt) {
  CommandLine cl;
  cl.Text("-o,--output", &opt->output, "the output directory (created if missing; required)")
      .Placeholder("DIR");
  cl.Text("--job", &opt->job, JobFlagHelp().c_str()).Placeholder("NAME");
  AddGroupsFlag(&opt->group_layout, &opt->groups,
                "outlier groups are named with their pipeline stages and the parallel group "
                "their ranks form, if any",
                &cl);
  cl.Switch("--json", &opt->json, "print the summary as JSON (summary.txt is still text)");
  cl.Integer("--top", 1, 1024, &opt->top,
             ("frames named per group in the summary " + DefaultIs(opt->top)).c_str());
  cl.Switch("--show-xtimer", &opt->show_xtimer,
            "keep xtimer's own threads (xtimer-poller...) and frames (libxtimer.so, xtimer::...) "
            "in the graphs and the summary; by default they are folded away, so that a call "
            "through the hook reads as the application's call");
  cl.Integer("-j,--jobs", 1, 1024, &opt->jobs, "reader threads (default: all hardware threads)");
  cl.Switch("-q,--quiet", &opt->quiet, "print only errors (not the summary)");
  AddHostsFlags(&opt->hosts, &opt->hosts_file, "", &cl);
  cl.Text("--path", &opt->path,
          "with --hosts: the folder under each daemon's dump root for its copy (default "
          "stacks-<unix time>)")
      .Placeholder("P");
  cl.Custom("--ranks", "LIST", RankList(&opt->ranks),
            "with --hosts: only these global ranks, e.g. 0,3,5 (default all)");
  cl.Custom("--timeout", "S", Seconds(0, kMaxTimeoutS, true, &opt->timeout_s),
            ("with --hosts: seconds a rank has to answer " +
             DefaultIs(opt->timeout_s, "at most " + FormatNumber(kMaxTimeoutS)))
                .c_str());
  cl.Positionals(&opt->inputs);
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  const bool live = !opt->hosts.empty() || !opt->hosts_file.empty();
  if (live && !opt->inputs.empty()) return BadArg(kCommand, "give either directories or --hosts, not both");
  if (!live && opt->inputs.empty()) return BadArg(kCommand, "no input directory (or --hosts)");
  if (opt->output.empty()) return BadArg(kCommand, "no output directory: give -o OUT/");
  return -1;
}

// Gives the processes without a rank their member numbers in the merger (Inputs::ranks) and
// their names in the tree.
void NameProcesses(const Inputs& in, st::StackMerger* merger, std::vector<std::string>* names) {
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    const st::StacksFile& f = in.ranks[i];
    if (st::HasRank(f)) continue;
    merger->SetMember(in.files[i], f.rank);
    names->push_back(RanklessProcessName(f.host, f.pid, f.device));
  }
}

// A parsed file's identity, without its frames and threads.
st::StacksFile Identity(const st::StacksFile& f) {
  st::StacksFile id;
  static_cast<st::StacksIdentity&>(id) = f;
  return id;
}

// Reads every input file on opt.jobs threads into *merger (each thread reuses one buffer and
// one StacksFile; files are taken one at a time, so both threads stay busy), xtimer's threads
// and frames folded away unless --show-xtimer, and selects the job's ranks.
int ReadInputs(const Options& opt, std::unique_ptr<st::StackMerger>* merger, Inputs* in) {
  std::vector<std::string> paths = ListInputs(opt.inputs, &in->problems);
  std::vector<st::StacksFile> parsed(paths.size());  // identities; world_size 0: unreadable
  std::vector<std::string> errors(paths.size());
  const int threads = static_cast<int>(std::min<size_t>(
      opt.jobs > 0 ? opt.jobs : std::max(1u, std::thread::hardware_concurrency()),
      std::max<size_t>(paths.size(), 1)));
  *merger = std::make_unique<st::StackMerger>(paths.size(), threads);
  std::atomic<size_t> next{0};
  ParallelFor(threads, threads, [&](size_t part) {
    std::string buffer;
    st::StacksFile file;
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) {
      if (!ReadStacks(paths[i], &buffer, &file, &errors[i])) continue;
      if (!opt.show_xtimer) st::FoldXtimer(&file);
      (*merger)->Add(static_cast<int>(part), i, file);
      parsed[i] = Identity(file);
    }
  });
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!errors[i].empty()) in->problems.push_back(paths[i] + ": " + errors[i] + ": skipped");
  }
  std::string error;
  if (!SelectRanks(&parsed, paths, opt.job, in, &error)) return BadArg(kCommand, error);
  return -1;
}

// What the merge and the graphs left out at their limits (docs/stacks.md "Limits"), as problems.
void AddCuts(const st::StackTree& tree, const st::OutputCut& folded, const st::OutputCut& svg,
             std::vector<std::string>* problems) {
  if (tree.cut_paths() > 0) {
    problems->push_back("the merged stacks reached " + std::to_string(tree.max_nodes()) +
                        " frames (the limit): " + std::to_string(tree.cut_paths()) +
                        " thread stacks cut short there (\"[cut: ...]\")");
  }
  if (folded.left_out > 0) {
    problems->push_back("stacks.folded reached " + std::to_string(st::kMaxFoldedBytes >> 20) +
                        " MiB (the limit): " + std::to_string(folded.left_out) + " of " +
                        std::to_string(folded.written + folded.left_out) + " lines left out");
  }
  if (svg.left_out > 0) {
    problems->push_back("stacks.svg reached " + std::to_string(st::kMaxSvgBytes >> 20) +
                        " MiB (the limit): " + std::to_string(svg.written) +
                        " frames drawn, the rest left out");
  }
}

// Writes the three outputs; *summary gets the problems of the limits (the exit status counts
// them).
int Write(const Options& opt, const st::StackTree& tree, st::SummaryInput* summary,
          const std::string& title) {
  if (mkdir(opt.output.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "xtimer stacks: cannot create %s: %s\n", opt.output.c_str(),
                 std::strerror(errno));
    return 1;
  }
  st::OutputCut folded, svg;
  if (!WriteFile(opt.output + "/stacks.folded",
                 st::FoldedStacks(tree, st::kMaxFoldedBytes, &folded)) ||
      !WriteFile(opt.output + "/stacks.svg",
                 st::FlameGraphSvg(tree, title, st::kMaxSvgBytes, &svg))) {
    return 1;
  }
  std::vector<std::string> cuts;
  AddCuts(tree, folded, svg, &cuts);
  for (const std::string& c : cuts) std::fprintf(stderr, "xtimer stacks: %s\n", c.c_str());
  summary->problems.insert(summary->problems.end(), cuts.begin(), cuts.end());
  std::string text = st::SummaryText(*summary);
  if (!WriteFile(opt.output + "/summary.txt", text)) return 1;
  if (opt.json) {
    std::fputs(st::SummaryJson(*summary).c_str(), stdout);
  } else if (!opt.quiet) {
    std::fputs(text.c_str(), stdout);
  }
  return -1;
}

// A file or folder name from a daemon's answer, or "" when it is not a plain one.
std::string PlainName(const std::string& s) {
  if (s.empty() || s == "." || s == ".." || s.size() > 255) return "";
  for (char c : s) {
    if (c == '/' || c == '\0') return "";
  }
  return s;
}

// Writes one node's answer under OUT/nodes/<node>/<job>/; what is missing goes to *problems.
void SaveNode(const std::string& dir, const std::string& target, const DumpStackResponse& r,
              std::vector<std::string>* problems) {
  mkdir(dir.c_str(), 0755);
  for (const StackFile& f : r.files()) {
    const size_t slash = f.path().rfind('/');
    const size_t up = slash == std::string::npos || slash == 0 ? std::string::npos
                                                               : f.path().rfind('/', slash - 1);
    const std::string name = slash == std::string::npos ? "" : PlainName(f.path().substr(slash + 1));
    const std::string job = up == std::string::npos
                                ? "" : PlainName(f.path().substr(up + 1, slash - up - 1));
    if (f.content().empty() || name.empty() || job.empty()) {
      const bool ranked = f.rank() >= 0 && f.world_size() > f.rank();
      problems->push_back(target + ": " +
                          (ranked ? "rank " + std::to_string(f.rank()) : RanklessName(f.pid(), -1)) +
                          " of job '" + f.job() +
                          "': no stack file (" + (f.error().empty() ? f.outcome() : f.error()) +
                          ")");
      continue;
    }
    mkdir((dir + "/" + job).c_str(), 0755);
    if (!WriteFile(dir + "/" + job + "/" + name, f.content())) {
      problems->push_back(target + ": " + name + ": cannot be written");
    }
  }
}

// --hosts: DumpStack to every node at once with the files' text; the files land in OUT/nodes/
// (the merge's input). Returns an exit status, or -1 to go on.
int FetchFromHosts(Options* opt, std::vector<std::string>* problems) {
  std::vector<std::string> targets;
  std::string error;
  if (!ControlTargets(opt->hosts, opt->hosts_file, &targets, &error)) return BadArg(kCommand, error);
  DumpStackRequest req;
  req.set_dump_path(opt->path.empty() ? "stacks-" + std::to_string(time(nullptr)) : opt->path);
  req.set_timeout_s(opt->timeout_s);
  req.set_with_content(true);
  if (!opt->job.empty()) req.add_jobs(opt->job);
  for (int r : opt->ranks) req.add_ranks(r);
  std::vector<DumpStackResponse> answers(targets.size());
  std::vector<std::string> errors(targets.size());
  OnEveryNode(targets.size(), [&](size_t i) {
    auto stub = HostingService::NewStub(ControlChannel(targets[i]));
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(opt->timeout_s + 10));  // symbolization and files on top
    grpc::Status st = stub->DumpStack(&ctx, req, &answers[i]);
    if (!st.ok()) errors[i] = ExplainRpcError(st, targets[i]);
  });
  const std::string nodes = opt->output + "/nodes";
  if ((mkdir(opt->output.c_str(), 0755) != 0 && errno != EEXIST) ||
      (mkdir(nodes.c_str(), 0755) != 0 && errno != EEXIST)) {
    std::fprintf(stderr, "xtimer stacks: cannot create %s: %s\n", nodes.c_str(),
                 std::strerror(errno));
    return 1;
  }
  size_t answered = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!errors[i].empty()) {
      problems->push_back(targets[i] + ": " + errors[i]);
      continue;
    }
    ++answered;
    std::string node = PlainName(answers[i].node());
    node = std::to_string(i) + "-" + (node.empty() ? "node" : node);
    SaveNode(nodes + "/" + node, targets[i], answers[i], problems);
  }
  if (answered == 0) {
    std::fprintf(stderr, "xtimer stacks: no node answered:\n");
    for (const std::string& p : *problems) std::fprintf(stderr, "  %s\n", p.c_str());
    return 1;
  }
  opt->inputs = {nodes};
  return -1;
}

}  // namespace

int StacksMain(int argc, char** argv) {
  Options opt;
  int rc = ParseStacksArgs(argc, argv, &opt);
  if (rc >= 0) return rc;
  std::vector<std::string> node_problems;
  if ((!opt.hosts.empty() || !opt.hosts_file.empty()) &&
      (rc = FetchFromHosts(&opt, &node_problems)) >= 0) {
    return rc;
  }
  Inputs in;
  std::unique_ptr<st::StackMerger> merger;
  if ((rc = ReadInputs(opt, &merger, &in)) >= 0) return rc;
  in.problems.insert(in.problems.begin(), node_problems.begin(), node_problems.end());
  for (const std::string& p : in.problems) std::fprintf(stderr, "skipped %s\n", p.c_str());
  if (in.ranks.empty()) {
    std::fprintf(stderr, "xtimer stacks: no readable stack file in the inputs\n");
    return 1;
  }
  const analysis::Groups& groups = opt.group_layout;
  if (!opt.groups.empty() && (rc = CheckGroupsWorld(kCommand, opt.groups, groups, in.world)) >= 0) {
    return rc;
  }
  std::vector<std::string> process_names;
  NameProcesses(in, merger.get(), &process_names);
  st::StackTree tree = merger->Build(in.files);
  merger.reset();
  tree.SetProcessNames(process_names);
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
  const size_t ranks = tree.ranks().size() - process_names.size();
  std::string title = "xtimer stacks: job " + in.ranks[0].job + ", " + std::to_string(ranks) +
                      " of " + std::to_string(in.world) + " ranks";
  if (!process_names.empty()) {
    title += " and " + std::to_string(process_names.size()) + " processes without a rank";
  }
  if ((rc = Write(opt, tree, &summary, title)) >= 0) return rc;
  return summary.problems.empty() && summary.missing_ranks.empty() ? 0 : 3;
}

}  // namespace cli
}  // namespace xtimer

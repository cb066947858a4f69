// xtimer analyze: hang verdicts, stragglers and true bus bandwidth from dumps or from the live
// daemons (see --help and docs/analyze-cli.md).
#include <grpcpp/grpcpp.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "analysis/report_text.h"
#include "cli/args.h"
#include "cli/analysis_args.h"
#include "cli/commands.h"
#include "cli/control_client.h"
#include "cli/readers/dump_reader.h"
#include "cli/readers/rank_progress.h"
#include "cli/readers/crash_input.h"
#include "cli/readers/stacks_input.h"
#include "proto/hosting.grpc.pb.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "analyze";  // for BadArg (cli/args.h)

constexpr char kUsage[] = R"HELP(usage: xtimer analyze DIR... [options]
       xtimer analyze --hosts HOST:PORT,... [--job J] [options]

Diagnoses a job: hang verdicts naming the culprit ranks (never_issued, mismatch,
stuck_in_collective, exited, not_started), stragglers with their cause (compute, host, link),
and each rank's observed and true bus bandwidth. docs/analysis.md explains the verdicts.

From dumps: each DIR is one node's directory of timeline files (as `xtimer dump` or xtimerd's
automatic hang dump writes them; a dump path holding job folders and single .timeline files work
too). The hang-summary-<host>.json files beside them (the automatic dump's record of every rank's
progress at the hang, one per node; hang-summary.json from older daemons) add what the files
cannot show: the operations in flight, exits, what each rank was last doing. Node clocks are
aligned from the collectives they share, as `xtimer timeline` does.

Live (--hosts): asks xtimerd on every node for its ranks' progress and their last 256 collectives
per communicator (the HangCheck control method), aligns the nodes' clocks on the collectives they
share, and runs the whole analysis on them: hang verdicts, stragglers and bus bandwidth.

)HELP";

constexpr char kAfter[] = R"HELP(exit status: 0 done, 1 nothing could be read (or no node answered), 2 bad arguments (also: --job
names none of the jobs, or --hosts found several jobs and no --job: the jobs are listed), 3 done
but the input is partial: ranks of the world have no data, files are (partly) unreadable or were
left out (their world size disagrees with the job's, or they are another job's), or nodes did
not answer (each is named on stderr).
)HELP";

struct Args : DumpArgs {
  std::vector<std::string> hosts;
  std::string hosts_file, groups_text, out;
  bool json = false, live = false;
  double hang_timeout_s = 0, timeout_s = 10;
  analysis::Options options;
};

// Returns -1 when the arguments are good, else the exit status.
int ParseAnalyzeArgs(int argc, char** argv, Args* a) {
  CommandLine cl;
  AddGroupsFlag(&a->options.groups, &a->groups_text,
                "findings name their group, and the pipeline stage that bounds the step is named",
                &cl);
  cl.Switch("--json", &a->json, "print the JSON report (schema in docs/analysis.md)");
  cl.Text("-o,--out", &a->out, "write the report to FILE instead of standard output")
      .Placeholder("FILE");
  AddHangTimeoutFlag(&a->hang_timeout_s, &cl);
  AddDumpArgs(a, ". With --hosts: only this job's ranks; several jobs on the nodes need --job",
              &cl);
  AddHostsFlags(&a->hosts, &a->hosts_file, "", &cl);
  cl.Number("--timeout", 0.1, 3600, &a->timeout_s,
            ("with --hosts: per-node deadline " + DefaultIs(a->timeout_s)).c_str())
      .Placeholder("S");
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  a->options.has_groups = !a->groups_text.empty();
  a->live = !a->hosts.empty() || !a->hosts_file.empty();
  if (a->live && !a->inputs.empty())
    return BadArg(kCommand, "give either dump directories or --hosts, not both");
  if (!a->live && a->inputs.empty()) return BadArg(kCommand, "no dump directory (or --hosts)");
  ApplyHangTimeout(a->hang_timeout_s, &a->options);
  return -1;
}

// The report of the analysis, and where it came from.
struct Outcome {
  std::vector<analysis::RankInput> ranks;
  int64_t now_ns = 0;
  int world = 0;
  analysis::ReportContext context;
  std::vector<std::string> problems;  // partial input, each named
  std::string summary;                // one line on what was read
  DumpReplay replay;                  // from dumps: the ranks' arrivals, read when judged
};

int FromDumps(const Args& a, Outcome* o) {
  DumpInput in;
  std::string error;
  if (!OpenDump(ReadOptionsOf(a), &in, &o->replay, &error)) {
    if (in.wrong_job) return BadArg(kCommand, error);
    std::fprintf(stderr, "xtimer analyze: %s\n", error.c_str());
    return 1;
  }
  if (!a.quiet) {
    for (const std::string& n : in.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  }
  o->problems = in.problems;
  for (const auto& off : in.offsets) o->context.clock_offsets_s.push_back({off.first, off.second * 1e-9});
  o->context.inputs.files = std::move(in.paths);
  o->context.inputs.missing_ranks = in.missing;
  o->now_ns = in.now_ns;
  o->world = in.world;
  char line[256];
  std::snprintf(line, sizeof(line),
                "read %d timeline file(s) (%llu events) and %d hang summary(ies): %zu of %d "
                "ranks, %zu node(s)",
                in.files, static_cast<unsigned long long>(in.events), in.summaries,
                in.ranks.size(), in.world, in.offsets.size());
  o->summary = line;
  o->ranks = std::move(in.ranks);
  AddCrashFrames(a.inputs, &o->ranks, &o->problems);  // crash reports beside the dump
  return -1;
}


int FromHosts(const Args& a, Outcome* o) {
  std::vector<std::string> targets;
  std::string error;
  if (!ControlTargets(a.hosts, a.hosts_file, &targets, &error)) return BadArg(kCommand, error);
  std::vector<HangCheckResponse> answers(targets.size());
  std::vector<std::string> errors(targets.size());
  HangCheckRequest req;
  req.set_job(a.job);
  req.set_arrivals(true);  // recent collectives: stragglers and bus bandwidth across nodes
  OnEveryNode(targets.size(), [&](size_t i) {
    // With arrivals, 8 ranks x 20 communicators x 256 collectives take about 3 MB.
    auto stub = HostingService::NewStub(ControlChannel(targets[i]));
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(a.timeout_s));
    grpc::Status st = stub->HangCheck(&ctx, req, &answers[i]);
    if (!st.ok()) errors[i] = ExplainRpcError(st, targets[i]);
  });
  std::vector<HangCheckResponse> ok;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (errors[i].empty()) {
      ok.push_back(std::move(answers[i]));
      o->context.inputs.files.push_back(targets[i]);
    } else {
      o->problems.push_back(targets[i] + ": " + errors[i]);
    }
  }
  if (ok.empty()) {
    std::fprintf(stderr, "xtimer analyze: no node answered:\n");
    for (const std::string& p : o->problems) std::fprintf(stderr, "  %s\n", p.c_str());
    return 1;
  }
  LiveInput live;
  if (!CombineHangChecks(ok, a.job, &live, &error)) return BadArg(kCommand, error);
  if (live.ranks.empty()) {  // no job yet (or only ranks that were left out): nothing to judge
    std::fprintf(stderr, "xtimer analyze: no rank%s on the %zu node(s) that answered (a job's "
                 "ranks show once they have registered and the live diagnosis has seen them)\n",
                 a.job.empty() ? "" : (" of job '" + a.job + "'").c_str(), ok.size());
    for (const std::string& w : live.warnings) std::fprintf(stderr, "  %s\n", w.c_str());
    return 1;
  }
  for (const std::string& w : live.warnings) o->problems.push_back(w);
  o->context.inputs.missing_ranks = live.missing;
  for (const auto& off : live.offsets) {
    o->context.clock_offsets_s.push_back({off.first, static_cast<double>(off.second) * 1e-9});
  }
  o->now_ns = live.now_ns;
  o->world = live.world;
  o->summary = std::to_string(ok.size()) + " of " + std::to_string(targets.size()) +
               " node(s) answered: " + std::to_string(live.ranks.size()) + " of " +
               std::to_string(live.world) + " ranks";
  if (live.threshold_s > 0 && a.hang_timeout_s == 0) {
    o->summary += ", hang thresholds per communicator from the daemons (smallest with an op "
                  "in flight " + std::to_string(live.threshold_s).substr(0, 6) + " s)";
  }
  o->ranks = std::move(live.ranks);
  return -1;
}

bool Write(const std::string& text, const std::string& path) {
  if (path.empty()) return std::fputs(text.c_str(), stdout) >= 0;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(("xtimer analyze: " + path).c_str());
    return false;
  }
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Reading allocates and frees buffers over and over (a file's block, each round's arrivals, the
// instances not yet judged). glibc would give those of over 128 KiB back to the kernel and fault
// them in again, zeroed: that doubled the page faults and cost about a quarter of the run's CPU
// time (docs/benchmarks.md). Keeping freed memory in the process reuses it; the peak is
// unchanged.
void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace

int AnalyzeMain(int argc, char** argv) {
  KeepFreedMemory();
  Args a;
  const int rc = ParseAnalyzeArgs(argc, argv, &a);
  if (rc >= 0) return rc;
  Outcome o;
  const int read = a.live ? FromHosts(a, &o) : FromDumps(a, &o);
  if (read >= 0) return read;
  analysis::Options opt = a.options;
  opt.now_ns = o.now_ns;
  if (a.hang_timeout_s > 0) {
    // The user's bound replaces the thresholds the daemons carried (hang summaries, --hosts).
    for (analysis::RankInput& r : o.ranks) {
      for (analysis::Progress& p : r.progress) p.threshold_ns = 0;
    }
  }
  int world = o.world;
  for (const analysis::RankInput& r : o.ranks) world = std::max(world, r.rank + 1);
  if (opt.has_groups) {
    const int bad = CheckGroupsWorld(kCommand, a.groups_text, opt.groups, world);
    if (bad >= 0) return bad;
  }
  for (const analysis::RankInput& r : o.ranks) o.context.inputs.ranks.push_back(r.rank);
  o.context.inputs.warnings = o.problems;
  o.context.inputs.groups = a.groups_text;
  // From dumps, the arrivals are read and judged as a stream (cli/readers/dump_replay.h).
  analysis::Report report = a.live ? analysis::Analyze(o.ranks, opt)
                                   : AnalyzeDump(o.replay, std::move(o.ranks), opt);
  if (!a.live) AddCulpritStacks(a.inputs, a.job, world, &report);  // stacks in the dump
  std::string text;
  if (a.json) {
    text = analysis::ReportJson(report, o.context) + "\n";
  } else {
    text = o.summary + "\n";
    for (const auto& off : o.context.clock_offsets_s) {
      char b[160];
      std::snprintf(b, sizeof(b), "clock offset %s: %+.6f s\n", off.first.c_str(), off.second);
      if (o.context.clock_offsets_s.size() > 1) text += b;
    }
    text += analysis::ReportText(report);
  }
  if (!Write(text, a.out)) return 1;
  if (!o.context.inputs.missing_ranks.empty()) {
    std::string list;
    for (size_t i = 0; i < o.context.inputs.missing_ranks.size() && i < 32; ++i)
      list += (i ? " " : "") + std::to_string(o.context.inputs.missing_ranks[i]);
    if (o.context.inputs.missing_ranks.size() > 32) list += " ...";
    o.problems.push_back(std::to_string(o.context.inputs.missing_ranks.size()) +
                         " rank(s) of the world have no data (" + list +
                         "): give every node's directory");
  }
  for (const std::string& p : o.problems) std::fprintf(stderr, "xtimer analyze: partial: %s\n", p.c_str());
  return o.problems.empty() ? 0 : 3;
}

}  // namespace cli
}  // namespace xtimer

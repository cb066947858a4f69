// xtimer timeline DIR... -o trace.pftrace: see --help and docs/perfetto.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/analysis_args.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/readers/job_inputs.h"
#include "timeline/converter.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "timeline";  // for BadArg (cli/args.h)

constexpr char kUsage[] = R"HELP(usage: xtimer timeline DIR... -o TRACE.pftrace [options]

Reads the per-rank timeline files (*.timeline) in each DIR (one directory per node, as written by
xtimerd's DumpKernelTrace; a .timeline file may also be named directly) and writes one Perfetto
trace of the whole job. Open it at https://ui.perfetto.dev. A DIR that holds job folders (the
dump_path given to DumpKernelTrace: DIR/JOB/*.timeline) is read folder by folder, with a note.
Warns when ranks of the world (the files' world size) have no file, and when the files come
from different dumps (job, dump_time).

Layout: one process per rank ("rank R (host)"), one thread per (device, stream) named by what runs
on it, and a host thread with launch instants and host synchronisations. Slices carry their
arguments (shape, dtype, bytes, TFLOPS, bus bandwidth, communicator, sequence, peer, root). Flows
link each collective (communicator, sequence) across its ranks, each send to a "Recv done"
instant where its receive ends, and each launch to its GPU slice.
Clocks of different nodes are aligned from the end times of the collectives they share; the
offsets applied are printed. See docs/perfetto.md.

)HELP";

constexpr char kAfter[] = R"HELP(exit status: 0 written (skipped inputs are listed on stderr), 1 nothing could be written,
2 bad arguments (also: --job names none of the jobs: they are listed), 3 written but partial:
ranks of the world have no file, files were left out (another job's, their world size disagrees
with the job's, or their metadata breaks the format's limits), or
events were left out for breaking them (docs/timeline-format.md, "Limits").
)HELP";

}  // namespace

int TimelineMain(int argc, char** argv) {
  timeline::ConvertOptions opt;
  std::string job;
  CommandLine cl;
  cl.Text("-o,--output", &opt.output, "the trace to write (required)").Placeholder("FILE");
  cl.Text("--job", &job, JobFlagHelp().c_str()).Placeholder("NAME");
  analysis::Groups groups;  // parsed as every command parses it (the converter reads opt.groups)
  AddGroupsFlag(&groups, &opt.groups, "each rank is labelled with its coordinates", &cl);
  cl.Integer("-j,--jobs", 1, 1024, &opt.jobs, "worker threads (default: all hardware threads)");
  cl.Switch("-q,--quiet", &opt.quiet, "print only errors");
  cl.SwitchOff("--no-args", &opt.args, "no per-slice arguments (smaller trace)");
  cl.SwitchOff("--no-launches", &opt.launches,
               "no host launch instants and launch flows (smaller trace)");
  cl.SwitchOff("--no-flows", &opt.flows,
               "no collective or send/recv flows (nor the \"Recv done\" instants)");
  cl.SwitchOff("--no-align", &opt.align_clocks, "do not align node clocks");
  cl.Integer("--compression-level", 0, 12, &opt.compression_level,
             ("zlib-compress packets at libdeflate level N: 1 (fastest) to 12 (smallest); 0 "
              "writes plain packets (for protoc --decode). Perfetto's UI and trace_processor read "
              "both " + DefaultIs(opt.compression_level)).c_str());
  cl.Custom("--no-compress", "", [&opt](const std::string& t, std::string* expected) {
    *expected = "true or false";
    bool on = false;
    if (!ParseSwitch(t, &on)) return false;
    if (on) opt.compression_level = 0;
    return true;
  }, "same as --compression-level 0");
  cl.Positionals(&opt.inputs);
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  if (opt.inputs.empty()) return BadArg(kCommand, "no input directory");
  if (opt.output.empty()) return BadArg(kCommand, "no output file: give -o TRACE.pftrace");
  opt.progress = !opt.quiet && isatty(STDERR_FILENO);
  JobFiles files;
  std::string error;
  if (!SelectJobFiles(opt.inputs, job, opt.jobs, &files, &error)) return BadArg(kCommand, error);
  for (const std::string& n : files.notes) {
    if (!opt.quiet) std::fprintf(stderr, "note: %s\n", n.c_str());
  }
  for (const std::string& p : files.problems) std::fprintf(stderr, "skipped %s\n", p.c_str());
  if (files.files.empty()) {
    std::fprintf(stderr, "xtimer timeline: no readable timeline files\n");
    return 1;
  }
  if (!opt.groups.empty() && files.world > 0) {
    const int bad = CheckGroupsWorld(kCommand, opt.groups, groups, files.world);
    if (bad >= 0) return bad;
  }
  opt.inputs = PathsOf(files.files);
  timeline::ConvertStats stats;
  if (!timeline::ConvertTimelines(opt, &stats, &error, stderr)) {
    std::fprintf(stderr, "xtimer timeline: %s\n", error.c_str());
    return 1;
  }
  return stats.missing_ranks > 0 || files.left_out > 0 || stats.rejected_events > 0 ? 3 : 0;
}

}  // namespace cli
}  // namespace xtimer

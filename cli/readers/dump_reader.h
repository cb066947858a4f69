// Reads dumps for `xtimer analyze`: the timeline files of any number of node directories (found
// as `xtimer timeline` finds them, timeline/inputs.h) and the hang-summary.json beside them (an
// automatic dump's HangCheckResponse), into the analysis library's per-rank input, on one clock
// (node clocks aligned from shared collectives' end times, as the converter aligns them).
#ifndef XTIMER_CLI_READERS_DUMP_READER_H_
#define XTIMER_CLI_READERS_DUMP_READER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "cli/readers/dump_replay.h"
#include "cli/readers/op_table.h"
#include "timeline/format.h"
#include "timeline/timeline_io.h"
#include "util/command_line.h"

namespace xtimer {
namespace cli {

// The files xtimerd writes beside an automatic dump's timeline files: hang-summary-<host>.json
// (daemon/diagnosis/hang_dumper.h), or hang-summary.json from older daemons and nodes without a
// label. A
// folder may hold several (daemons sharing a dump root); every one is read.
constexpr char kHangSummaryPrefix[] = "hang-summary";
constexpr char kHangSummarySuffix[] = ".json";

// The hang summaries in `dir`, sorted by name.
std::vector<std::string> HangSummariesIn(const std::string& dir);

struct DumpReadOptions {
  std::vector<std::string> inputs;  // directories, .timeline files, dump paths of job folders
  std::string job;                  // the job to read (--job); "" when the inputs hold one
  int jobs = 0;                     // reader threads; 0: hardware threads
  bool align_clocks = true;
  FILE* progress = nullptr;         // draws "reading i/n files" here when set
  bool arrivals = false;            // OpenDump: read the ranks' arrivals too (ReadDump sets it)
  // Also the op table of the files read (DumpInput::table), made in the same pass.
  bool op_table = false;
};

struct DumpInput {
  std::vector<analysis::RankInput> ranks;  // by rank
  // The dump's time on the aligned clock: the latest of the files' capture ends and the hang
  // summaries' `now`.
  int64_t now_ns = 0;
  std::vector<std::pair<std::string, int64_t>> offsets;  // node -> ns added to its times
  // The job read, and its world size: the one most of its files give (cli/job_inputs.h), else
  // the one most summary entries give; files and entries that disagree are left out (problems).
  std::string job;
  int world = 0;
  std::vector<int32_t> missing;    // ranks of the world with neither a file nor a summary entry
  std::vector<std::string> paths;  // the timeline files and hang summaries read
  int files = 0;                   // timeline files read
  int summaries = 0;               // hang summaries read
  uint64_t events = 0;
  std::vector<std::string> problems;  // "path: why": inputs or files (partly) unreadable
  std::vector<std::string> notes;     // how inputs were read
  bool partial() const { return !missing.empty() || !problems.empty(); }
  // A false return because the inputs hold several jobs and no --job, or --job names none of
  // them: a bad argument (exit 2), not unreadable input.
  bool wrong_job = false;
  // The metadata of each timeline file read, in `paths` order, without its strings and
  // communicators (the hook's cost, the process).
  std::vector<timeline::Metadata> metadata;
  OpTable table;  // with DumpReadOptions::op_table: the files read (ranks 0 when none)
};

// The arguments of a command that reads one dump (`xtimer analyze`, `xtimer report`): the dump's
// inputs, --job, --jobs, --no-align, --quiet.
struct DumpArgs {
  std::vector<std::string> inputs;
  std::string job;
  int jobs = 0;
  bool align = true;
  bool quiet = false;
};

// Adds those arguments to `cl`, with their help: positional inputs, --job, -j/--jobs,
// --no-align, -q/--quiet. `job_more` ends --job's help ("" for nothing more).
void AddDumpArgs(DumpArgs* args, const char* job_more, CommandLine* cl);

// How such a command reads its dump: progress drawn on stderr when it is a terminal and the
// command is not --quiet.
DumpReadOptions ReadOptionsOf(const DumpArgs& args);

// Returns false with *error when nothing could be read, or when the job is not chosen (above).
// The ranks hold every arrival (OpenDump with `arrivals`): each file's events are read once,
// for the op table too when options.op_table.
bool ReadDump(const DumpReadOptions& options, DumpInput* out, std::string* error);

// The first pass of a reader that does not hold the arrivals: the ranks without them (unless
// options.arrivals), and what a second pass needs to read them (*replay: ReadArrivals,
// AnalyzeDump in cli/dump_replay.h). Memory: each rank's own facts and each node's collective
// ends, not the files' events.
bool OpenDump(const DumpReadOptions& options, DumpInput* out, DumpReplay* replay,
              std::string* error);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_DUMP_READER_H_

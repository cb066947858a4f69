// The one input check of `xtimer timeline`, `xtimer diff` and `xtimer analyze`: which jobs the
// timeline files of the inputs hold (the `job` label of each file's metadata,
// docs/timeline-format.md), and which of them to use. Two jobs are never merged into one world:
// of inputs holding several jobs, --job names the one to read, else the job with the most files
// is read and the others' files are left out and reported (a partial result: exit 3); within the
// chosen job, the world size most files give is the job's, and a file that
// says otherwise (or whose rank is not below it) is left out and reported: a stray or corrupt
// file never sizes the world.
#ifndef XTIMER_CLI_READERS_JOB_INPUTS_H_
#define XTIMER_CLI_READERS_JOB_INPUTS_H_

#include <string>
#include <vector>

#include "timeline/format.h"
#include "timeline/inputs.h"

namespace xtimer {
namespace cli {

struct JobFiles {
  std::vector<timeline::InputFile> files;  // the chosen job's files (and files whose header
                                           // could not be read: their readers report them)
  std::vector<std::string> dirs;           // every directory listed (hang summaries live there)
  std::string job;                         // the chosen job's label
  int world = 0;                           // the world size its files agree on; 0: unknown
  std::vector<std::string> problems;       // "input: why": skipped inputs, files left out
  int left_out = 0;                        // files left out (world size or rank)
  std::vector<std::string> notes;          // how inputs were read (a dump path's job folders)
};

// --job's help, the rule above in a sentence: only the named job's files are read.
std::string JobFlagHelp();

// Lists `inputs` (timeline/inputs.h) and reads each file's metadata on up to `threads` threads
// (0: hardware threads). Returns false with *error when `job` is not empty and names none of the
// jobs found (the error lists every job with its file count and folders, and says to pass --job
// NAME). With several jobs and no `job`, keeps the one with the most files and adds the others
// (listed the same way) to `problems` and their files to `left_out`.
bool SelectJobFiles(const std::vector<std::string>& inputs, const std::string& job, int threads,
                    JobFiles* out, std::string* error);

// The largest world size taken as true; a file or entry that claims more is corrupt (the
// timeline reader's limit, timeline/format.h).
constexpr int kMaxWorldSize = timeline::kMaxWorldSize;

// The world size given by most of `sizes` in [1, kMaxWorldSize] (ties: the smallest); 0 when
// none is.
int AgreedWorld(const std::vector<int>& sizes);

// The paths of `files`, as inputs for a reader that takes paths (a .timeline file names itself).
std::vector<std::string> PathsOf(const std::vector<timeline::InputFile>& files);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_JOB_INPUTS_H_

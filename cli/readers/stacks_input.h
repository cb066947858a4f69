// Finding and reading per-rank .stacks files (docs/stacks.md): `xtimer stacks` merges them,
// `xtimer analyze` shows the hang culprits' top frames from them.
#ifndef XTIMER_CLI_READERS_STACKS_INPUT_H_
#define XTIMER_CLI_READERS_STACKS_INPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace cli {

// Regular files whose name ends in `suffix` under `dir`, recursively (symbolic links are not
// followed; 16 levels at most), sorted per directory, appended to *out.
void FindFiles(const std::string& dir, int depth, const std::string& suffix,
               std::vector<std::string>* out);

// Reads a regular file (not through a symbolic link) of at most `max_bytes`; false with *error.
bool ReadBoundedFile(const std::string& path, uint64_t max_bytes, std::string* text,
                     std::string* error);

// *.stacks under `dir`, recursively (symbolic links are not followed; 16 levels at most), sorted
// per directory, appended to *out.
void FindStacks(const std::string& dir, int depth, std::vector<std::string>* out);

// Reads and parses one file; false with *error ("why") on failure. A file over
// stacktrace::kMaxFileBytes is refused before it is read.
bool ReadStacks(const std::string& path, stacktrace::StacksFile* out, std::string* error);
// The same, reading into *buffer and parsing into *out, both kept from the previous file (no
// allocation per file once they are large enough: for readers of many files).
bool ReadStacks(const std::string& path, std::string* buffer, stacktrace::StacksFile* out,
                std::string* error);

// For each hang verdict of `report` with culprits, adds to its evidence the top frames of each
// culprit rank (at most 4 per verdict) whose {rank}-{world}.stacks file is under `dirs` (of job
// `job` when not empty): "rank 5's stacks: in load_batch (data.py:42) <- train_step (...)".
void AddCulpritStacks(const std::vector<std::string>& dirs, const std::string& job, int world,
                      analysis::Report* report);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_STACKS_INPUT_H_

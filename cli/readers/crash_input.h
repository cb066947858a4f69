// Crash reports beside a dump (docs/crash.md, docs/analyze-cli.md): `xtimer analyze DIR` reads
// the crash.json files under DIR and in the crash-* folders of the dump root DIR is in, and puts
// each crashed rank's crashing frame (for a Python exception also its type and message) into the
// rank's exit, so that the exited verdict shows it. Every file goes through a bounded reader: a
// file that cannot be read or parsed is reported, never trusted.
#ifndef XTIMER_CLI_READERS_CRASH_INPUT_H_
#define XTIMER_CLI_READERS_CRASH_INPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace xtimer {
namespace cli {

constexpr uint64_t kMaxCrashJsonBytes = 16u << 20;  // crash.json: 1,024 frames of 4 KiB names
constexpr size_t kMaxCrashReportFiles = 4096;       // read per analyze run

// What the exited verdict needs of one crash.json ("xtimer-crash" version 1).
struct CrashInfo {
  std::string job, host;
  int64_t pid = 0;
  std::vector<int32_t> ranks;  // empty: a process whose rank is not known
  std::string frame;  // analysis::CrashFrameText: the frame and a Python exception
};

// Parses crash.json's text; false with *error naming the field.
bool ParseCrashJson(const std::string& text, CrashInfo* out, std::string* error);

// crash.json files under each of `dirs`, and in the crash-* folders of the dump root that a dir
// is in (the parent of a hang-*/ or dump folder DIR/JOB, or of DIR), without duplicates.
std::vector<std::string> FindCrashReports(const std::vector<std::string>& dirs);

// Of the crash.json files `found`, those that are evidence (docs/security.md): in a crash folder
// with the daemon's own copy (crash-X/crash.json) readable by this user, that copy alone;
// otherwise a file that neither it nor its folder could be written by a user other than this one
// and root. Each file left out for that is named in *problems.
std::vector<std::string> TrustedCrashReports(const std::vector<std::string>& found,
                                             std::vector<std::string>* problems);

// Sets exit.crash_frame of every exited rank of `ranks` that a report of `dirs` names (same pid,
// rank and host; a report with `"ranks": []` names the process of that pid whose rank is not
// known, rank -1). Appends "crash report PATH: why" to *problems for files it cannot use.
void AddCrashFrames(const std::vector<std::string>& dirs, std::vector<analysis::RankInput>* ranks,
                    std::vector<std::string>* problems);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_CRASH_INPUT_H_

// The CLI readers' one way into a timeline file: every read of a file's metadata or events by
// cli/readers goes through here and is counted, so that what a command costs in reads is a figure
// a test can check (`xtimer report` reads each file's events once: readers' file_reads_test;
// `xtimer analyze` twice, by design: cli/readers/dump_replay.h).
#ifndef XTIMER_CLI_READERS_FILE_READS_H_
#define XTIMER_CLI_READERS_FILE_READS_H_

#include <cstdint>
#include <string>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {

// timeline::ReadTimelineMetadata, counted: the header only, no event is read.
timeline::ReadResult ReadFileMetadata(const std::string& path);

// timeline::ReadTimelineBlocks, counted as one pass over the file's events.
timeline::ReadResult ReadFileEvents(const std::string& path,
                                    const timeline::BlockCallbacks& callbacks);

// For a reader that reads a file's events by itself (the second pass of `xtimer analyze`, which
// reads the blocks the first found): one pass begun.
void CountEventPass();

// The reads of this process so far (every thread's).
struct FileReads {
  uint64_t metadata = 0;      // header reads
  uint64_t event_passes = 0;  // passes over a file's events
};
FileReads FileReadsSoFar();

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_FILE_READS_H_

// Writing and reading timeline files (format.h). One implementation serves xtimerd (writer) and
// the `xtimer` CLI (reader).
#ifndef XTIMER_TIMELINE_TIMELINE_IO_H_
#define XTIMER_TIMELINE_TIMELINE_IO_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/record.h"
#include "timeline/format.h"

namespace xtimer {
namespace timeline {

struct CommInfo {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  int32_t size = 0;
  int32_t rank = -1;         // this file's rank in the communicator
  int32_t global_rank = -1;  // this file's global rank
  std::vector<int32_t> members;  // global ranks by communicator rank; -1 where unknown
};

// What the hook cost its process up to the dump (ring header hook_own_ns, op_calls, op_timed,
// budget_ppm; the ring's creation). present is false in files from daemons before it.
struct HookCost {
  bool present = false;
  int64_t start_ns = 0;    // the hook's start (its ring's creation), CLOCK_REALTIME
  uint64_t own_ns = 0;     // its own time on the process's application threads
  uint32_t budget_ppm = 0;  // XTIMER_OVERHEAD_BUDGET (0: a hook before it)
  std::vector<uint64_t> calls, timed;  // by OpKind value (index), ops considered and timed
};

struct Metadata {
  std::string job;
  std::string host;
  std::string node;
  std::string pod;
  int32_t pid = 0;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = -1;
  int32_t device = -1;
  int64_t clock_realtime_ns = 0;
  int64_t clock_monotonic_ns = 0;
  std::vector<std::string> strings{""};  // string table; index 0 is ""
  std::vector<CommInfo> comms;
  int64_t dump_time_ns = 0;
  int64_t window_begin_ns = 0;
  int64_t window_end_ns = 0;
  uint32_t kinds = 0;  // kDump* mask requested (0: all)
  HookCost hook;
  std::vector<NvtxEntry> nvtx;  // kTagNvtx
};

// Where the steps a rank's job marked start: its NVTX push/pop ranges flagged format::kNvtxStep
// (a range named XTIMER_STEP_RANGE, a Python step function: docs/hook.md). The one reading of the
// marks, for the analysis (analysis/steps.h MarkedSteps) and the trace's steps track.
inline std::vector<int64_t> MarkedStepStarts(const Metadata& m) {
  std::vector<int64_t> starts;
  for (const NvtxEntry& e : m.nvtx) {
    if (e.event == static_cast<uint8_t>(format::NvtxEvent::kRange) &&
        (e.flags & format::kNvtxStep) != 0) {
      starts.push_back(e.start_ns);
    }
  }
  return starts;
}

// "{rank:05d}-{world:05d}.timeline", or "pid-{pid}[-dev{device}].timeline" when the rank is
// unknown (util/process_name.h).
std::string TimelineFileName(int rank, int world_size, int pid, int device = -1);

// Writes one file. Append() buffers a block and writes it when full; Finish() writes the last
// block and the final event count. Errors (disk full, ...) are reported once and stick.
class TimelineWriter {
 public:
  // Creates `path` (through a temporary name renamed on Finish, so readers never see a partial
  // file under the final name). Returns nullptr with *error on failure.
  static std::unique_ptr<TimelineWriter> Create(const std::string& path, const Metadata& metadata,
                                                std::string* error);
  // The same with `path` relative to the directory `dir_fd` (AT_FDCWD: the working directory;
  // the writer keeps its own duplicate of the descriptor). The file and its temporary are
  // created with O_NOFOLLOW | O_EXCL and renamed with renameat, so a symlink swapped into the
  // directory's path after it was opened cannot redirect them.
  static std::unique_ptr<TimelineWriter> CreateAt(int dir_fd, const std::string& path,
                                                  const Metadata& metadata, std::string* error);
  ~TimelineWriter();
  bool Append(const EventRecord& event);
  // Returns false with *error if anything failed.
  bool Finish(std::string* error);
  uint64_t events() const;

 private:
  TimelineWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ReadResult {
  bool ok = false;          // header and metadata were good (events may still be partial)
  bool complete = false;    // every block was intact and the count matched the header
  std::string error;        // why the file was rejected, or why reading stopped early
  Metadata metadata;
  uint64_t events = 0;      // events delivered
  uint64_t rejected = 0;    // events left out for breaking a limit (then complete is false)
};

// Reads `path`, calling `on_event` for every event of every intact block, in file order, without
// holding more than one block in memory.
ReadResult ReadTimeline(const std::string& path,
                        const std::function<void(const EventRecord&)>& on_event);

// The same from a memory buffer (fuzzing, tests).
ReadResult ReadTimelineBuffer(const uint8_t* data, size_t size,
                              const std::function<void(const EventRecord&)>& on_event);

// Reads only the header and metadata of `path` (ok: both were good; complete stays false, no event
// is read).
ReadResult ReadTimelineMetadata(const std::string& path);

// Block-wise reading, for readers that work on events in bulk: `on_metadata` (may be empty) is
// called once, after the metadata was checked and before any event; `on_block` once per intact
// block with its events, in file order. The result is ReadTimeline's.
// `on_block_at` (may be empty) is called before each block with where the block's events lie in the file
// (`offset`, `count` records before the range check): a reader that comes back for them later
// reads them there (the block's CRC was checked).
struct BlockCallbacks {
  std::function<void(const Metadata&)> on_metadata;
  std::function<void(const EventRecord* events, size_t count)> on_block;
  std::function<void(uint64_t offset, uint32_t count)> on_block_at;
};
ReadResult ReadTimelineBlocks(const std::string& path, const BlockCallbacks& callbacks);

uint32_t Crc32(const void* data, size_t size, uint32_t crc = 0);

// What makes `e` break the limits of timeline/format.h ("duration_ns -5 is negative"), or "".
// Readers leave such events out.
std::string EventOutOfRange(const EventRecord& e);
// Whether `e` keeps within those limits (EventOutOfRange(e) is ""), without making any text.
bool EventWithinLimits(const EventRecord& e);
// The same for the metadata's identity and communicators.
std::string MetadataOutOfRange(const Metadata& m);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_TIMELINE_IO_H_

// The per-rank stack file `{rank:05d}-{world:05d}.stacks` (`pid-PID[-devD].stacks` for a process
// whose rank is not known: rank and world size -1; JSON, "format": "xtimer-stacks",
// "version": 1), documented field by field in docs/stacks.md: who the rank is, when its stacks
// were taken, the process state, a table of frames and per thread the frames it is in (indices
// into the table, innermost first). The capture side writes it with WriteStacksJson; the CLI
// reads it with ParseStacksJson, which range-checks every field (a file is outside input).
#ifndef XTIMER_STACKTRACE_STACKS_FILE_H_
#define XTIMER_STACKTRACE_STACKS_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace stacktrace {

constexpr char kStacksFormat[] = "xtimer-stacks";
constexpr int kStacksVersion = 1;
constexpr char kStacksSuffix[] = ".stacks";

// Bounds of a valid file: anything beyond them is refused with a message naming the field.
constexpr int kMaxWorldSize = 1 << 20;
constexpr int kMaxThreads = 4096;
constexpr int kMaxFramesPerThread = 1024;
constexpr int kMaxFrameTable = 1 << 16;    // distinct frames in one file
constexpr size_t kMaxStringBytes = 4096;   // function, module, thread name, error
constexpr size_t kMaxLabelBytes = 256;     // job, host, process_state
constexpr size_t kMaxFileBytes = 64 << 20;

struct Frame {
  // kThread and kError are not in files: the merged tree's level of thread names, and the
  // leaf that says why a thread or a rank has no stack.
  enum Kind { kNative, kPython, kThread, kError };
  Kind kind = kNative;
  std::string function;  // may be empty for a native frame with no symbol
  std::string module;    // native: the shared object's path; python: the source file
  int32_t line = 0;      // python: the line; native: the line when known; 0: unknown
  std::string file;      // native: the source file of `line` (DWARF's name); "" unknown
};

struct Thread {
  int64_t tid = 0;
  std::string name;
  std::vector<uint32_t> frames;  // indices into StacksFile::frames, innermost first
  std::string error;             // why the stack is missing or short; "" if none
};

// Whose stacks a file holds and when they were taken: everything but the frames and threads.
struct StacksIdentity {
  std::string job;
  int32_t rank = 0;         // -1 (with world_size -1): a process whose rank is not known
  int32_t world_size = 0;
  int32_t local_rank = -1;  // -1: unknown
  int32_t device = -1;      // a rank-less process's device when the daemon knows it; -1 unknown
  std::string host;
  int64_t pid = 0;
  int64_t capture_time_ns = 0;  // Unix time
  std::string process_state;    // from /proc/PID/stat, e.g. "S"; "" if unknown
  std::string error;            // why stacks are missing for the whole rank; "" if none
};

struct StacksFile : StacksIdentity {
  std::vector<Frame> frames;
  std::vector<Thread> threads;
};

// Parses and checks one file's text. On failure returns false with *error saying which field
// is wrong and why (the caller prefixes the path). A one-pass reader reads the files of the
// usual shape; anything else goes to the JSON DOM reader, which decides and words the refusal
// (stacks_stream.h).
bool ParseStacksJson(const std::string& text, StacksFile* out, std::string* error);

// The file's JSON text (one line per thread and per frame, so that a file reads in a pager).
std::string WriteStacksJson(const StacksFile& file);

// The file name the capture side writes: {rank:05d}-{world:05d}.stacks.
std::string StacksFileName(int32_t rank, int32_t world_size);
// The same for a file's identity: pid-PID[-devD].stacks when its rank is not known.
std::string StacksFileName(const StacksIdentity& id);
// Whether a (parsed) identity names a rank; false: a process whose rank is not known.
inline bool HasRank(const StacksIdentity& id) { return id.world_size > 0; }

// "native" / "python" / "thread" / "error".
const char* KindName(Frame::Kind kind);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_STACKS_FILE_H_

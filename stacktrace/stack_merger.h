// The cross-rank merge of merge.h for many files parsed on several threads (`xtimer stacks`):
// each reader thread hands the files it parses to its own part, which keeps only what the tree
// needs (the distinct frames, and each distinct thread path with the files that take it), so the
// parsed file can be reused for the next one; Build then makes the StackTree that
// StackTree::AddRank would have made from the chosen files in ascending rank order, the same
// node for node, rank for rank and frame for frame. A rank list is filled once per distinct path
// instead of one rank at a time, and no file has to be kept until the job and world are chosen.
#ifndef XTIMER_STACKTRACE_STACK_MERGER_H_
#define XTIMER_STACKTRACE_STACK_MERGER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "stacktrace/merge.h"
#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

class StackMerger {
 public:
  // Files are numbered 0..files-1; parts: one per thread that calls Add.
  StackMerger(size_t files, int parts);

  // Takes file number `file` on behalf of part `part`. Calls for one part must not overlap;
  // calls for different parts may. `f` is not kept.
  void Add(int part, size_t file, const StacksFile& f);

  // Gives file `file` (added before) the member number `member` in place of its rank: a process
  // whose rank is not known is kFirstProcessMember + k (merge.h).
  void SetMember(size_t file, int32_t member) { files_[file].rank = member; }

  // The tree of the files `kept` (added before), which must be in ascending rank order, each
  // rank once (as AddRank requires; files out of order are left out).
  StackTree Build(const std::vector<size_t>& kept) const;

 private:
  struct Use {        // a thread of a file that takes a path
    uint32_t file;    // file number
    uint32_t thread;  // position of the thread in the file's merge order (NamedThreads)
  };
  struct Path {
    std::string thread, error;
    std::vector<uint32_t> frames;  // the part's frame ids, innermost first
    std::vector<Use> uses;
  };
  struct Part {
    std::vector<Frame> frames;
    std::unordered_map<std::string, uint32_t> frame_ids;
    std::vector<Path> paths;
    std::unordered_map<std::string, uint32_t> path_ids;
    std::vector<uint32_t> last_frames;  // the previous file's frame index -> id (or UINT32_MAX)
    std::vector<uint32_t> last_paths;   // the previous file's thread position -> path id
    std::vector<uint32_t> local, ids, now_paths;  // scratch
    std::string key;
    StackTree::NamedThreads named;
  };
  struct FileStacks {  // what the summary needs of a file
    int32_t rank = -1;
    int part = -1;                    // -1: never added
    uint32_t main_path = UINT32_MAX;  // the main thread's path in the part (none: no threads)
    std::string main_thread, main_error;
  };
  // A path of the kept files, the same in every part that has it.
  struct Merged {
    int part;       // a part that has it
    uint32_t path;  // and its index there
    uint64_t first;  // its first use: rank << 32 | thread position (the order AddRank walks)
    std::vector<int32_t> ranks;    // the kept ranks that take it, ascending
    std::vector<uint32_t> frames;  // the tree's frame ids (filled by Build)
  };

  static void UnionOf(const std::vector<Merged>& paths, const std::vector<uint32_t>& ids,
                      std::vector<int32_t>* ranks);
  static uint32_t FrameId(Part* p, const StacksFile& f, uint32_t index);
  static uint32_t PathId(Part* p, size_t position, const std::string& thread,
                         const std::string& error);
  // The paths taken by kept files (rank_of[file] >= 0), in the order of their first use;
  // *index: part -> its path -> the merged path (UINT32_MAX: none).
  std::vector<Merged> MergePaths(const std::vector<int32_t>& rank_of,
                                 std::vector<std::vector<uint32_t>>* index) const;

  std::vector<Part> parts_;
  std::vector<FileStacks> files_;
};

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_STACK_MERGER_H_

// The cross-rank merge of stack files (docs/stacks.md): one tree of frames, root -> thread name
// -> outermost frame -> ... -> innermost frame, each node carrying the set of ranks whose stacks
// pass through it. Widths are rank counts: 1,023 identical ranks make a node 1,023 wide. Threads
// of one rank are merged by name; when a rank has several threads of one name, the second and
// later (by tid) are "NAME #2", "NAME #3", ..., so under a thread node every rank follows one
// path and the children of a node never hold more ranks than it does.
#ifndef XTIMER_STACKTRACE_MERGE_H_
#define XTIMER_STACKTRACE_MERGE_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

// A set of ranks kept as ascending runs of consecutive ranks: {0,1,2,4,5,6,7} is the two runs
// 0-2 and 4-7. The ranks of a node are mostly a few runs (all ranks but the outliers), so a
// node of 8,192 ranks holds a few pairs instead of 8,192 numbers.
class RankSet {
 public:
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Adds a rank not below the largest so far (a repeat of the largest is ignored).
  void Append(int32_t rank);
  // Adds ascending, possibly repeated ranks (any order against those already in).
  void Merge(const std::vector<int32_t>& ascending);
  // The runs (first, last), ascending, apart by more than one.
  const std::vector<std::pair<int32_t, int32_t>>& runs() const { return runs_; }
  std::vector<int32_t> ToVector() const;
  bool operator==(const RankSet& o) const { return runs_ == o.runs_; }

 private:
  std::vector<std::pair<int32_t, int32_t>> runs_;
  size_t count_ = 0;
};

// A member of the merge is a rank (0 .. kMaxWorldSize-1) or a process whose rank is not known,
// numbered from kFirstProcessMember on (the reader numbers them, StackTree::SetProcessNames names
// them): such a process is printed by its name ("node-a:pid-4242"), never as a number.
constexpr int32_t kFirstProcessMember = kMaxWorldSize;

// Bounds of the merge and its outputs (docs/stacks.md "Limits"), so that `xtimer stacks` takes time
// and memory in proportion to its input, whatever the input: a file within every limit of
// stacks_file.h can still name 4 M frames (4,096 threads of 1,024) with 12 KiB of text each.
// The tree holds at most kMaxTreeNodes nodes: a path that needs more ends where it reached, in
// a leaf "[cut: ...]" (each such leaf is one node more, at most one per node).
constexpr size_t kMaxTreeNodes = size_t{1} << 20;
constexpr size_t kMaxFoldedBytes = size_t{64} << 20;   // OUT/stacks.folded
constexpr size_t kMaxSvgBytes = size_t{64} << 20;      // OUT/stacks.svg
constexpr size_t kMaxSummaryBytes = size_t{16} << 20;  // summary.txt, and --json's summary

// What an output writer left out to stay under its byte limit: items are folded lines, or the
// flame graph's frames, or the summary's groups.
struct OutputCut {
  size_t written = 0, left_out = 0;
};

struct Node {
  uint32_t frame = 0;               // index into StackTree::frames() (unused at the root)
  int32_t parent = -1;
  int32_t depth = 0;                // 0: the root, 1: thread names, 2: outermost frames
  std::vector<uint32_t> children;   // node indices
  RankSet ranks;                    // ranks passing through
  std::vector<int32_t> self_ranks;  // ranks whose stack ends here (a leaf of theirs)
};

// Ranks with the same main-thread stack (the thread whose tid is the pid, else the first).
struct RankGroup {
  std::vector<int32_t> ranks;    // ascending
  std::vector<uint32_t> frames;  // the stack, innermost first (frame indices); empty: none
  std::string thread;            // the main thread's name
  std::string error;             // why there is no stack, when frames is empty
};

class StackTree {
 public:
  friend class StackMerger;  // stack_merger.h: the same tree from files read on many threads

  // max_nodes: kMaxTreeNodes (tests give less).
  explicit StackTree(size_t max_nodes = kMaxTreeNodes);

  // Adds one rank's stacks. Ranks must come in ascending order, each once (a repeated or
  // smaller rank is ignored and false returned).
  bool AddRank(const StacksFile& file);

  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0] is the root
  const std::vector<Frame>& frames() const { return frames_; }
  const std::vector<int32_t>& ranks() const { return root_ranks_; }  // every rank, ascending
  // Thread paths cut short at the node limit (each ends in a "[cut: ...]" leaf).
  size_t cut_paths() const { return cut_paths_; }
  size_t max_nodes() const { return max_nodes_; }
  // The width of a node in the flame graph: its rank count; the root's is the sum of its
  // children's (one rank counts once per thread name).
  int64_t Width(uint32_t node) const;
  // Ranks grouped by identical main-thread stacks, the biggest group first (ties: lowest rank).
  std::vector<RankGroup> GroupRanks() const;

  // The names of the members kFirstProcessMember, kFirstProcessMember + 1, ...: processes whose
  // rank is not known, as util/process_name.h's RanklessProcessName spells them.
  void SetProcessNames(std::vector<std::string> names) { process_names_ = std::move(names); }
  bool HasProcesses() const { return !process_names_.empty(); }
  // The name of member `member` >= kFirstProcessMember ("#K" when it has none).
  std::string ProcessName(int32_t member) const;
  // Members (ascending) as text: "rank 3", "ranks 0-2,4-7", "process node-a:pid-4242",
  // "ranks 0-2 and processes node-a:pid-7,node-b:pid-9" (members.cc).
  std::string Members(const std::vector<int32_t>& members) const;
  std::string Members(const RankSet& members) const;

 private:
  // *key = the identity of a frame (kind, line, function, module, file) as Intern looks it up.
  static void FrameKey(const Frame& frame, std::string* key);
  static bool SameFrame(const Frame& a, const Frame& b);
  // The thread whose stack stands for the rank in the summary (tid == pid, else the first).
  static const Thread* MainThread(const StacksFile& file);
  // A file's threads in the order they are merged (by tid, stable) with their names in the
  // tree ("NAME", then "NAME #2", ...); kept between files to reuse its memory.
  struct NamedThreads {
    std::vector<const Thread*> threads;
    std::vector<std::string> names;
    std::vector<uint32_t> order;  // scratch
    void Of(const StacksFile& file);
  };
  uint32_t Intern(const Frame& frame);
  // The child of `parent` for `frame`, created when missing (beyond the node limit too).
  uint32_t Child(uint32_t parent, uint32_t frame);
  // The same without creating it: UINT32_MAX when missing. A node with many children finds
  // them through child_index_, never by a scan of all of them.
  uint32_t FindChild(uint32_t parent, uint32_t frame) const;
  void Visit(uint32_t node, int32_t rank);
  // The nodes of a thread's path (thread node first), created where missing; at the node limit
  // the path ends in a "[cut: ...]" leaf below the deepest node it reached.
  std::vector<uint32_t> WalkPath(const std::string& thread, const std::vector<uint32_t>& frames,
                                 const std::string& error);
  // Adds the rank to every node of the path; a path seen before is not walked again.
  void AddPath(int32_t rank, const std::string& thread, const std::vector<uint32_t>& frames,
               const std::string& error);

  std::vector<Node> nodes_;
  size_t max_nodes_;
  size_t cut_paths_ = 0;
  std::unordered_map<uint64_t, uint32_t> child_index_;  // parent << 32 | frame -> child
  std::vector<int32_t> root_ranks_;  // the root's ranks (nodes_[0].ranks) as a list
  std::vector<Frame> frames_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  // Every path added so far (thread name, error, frame ids) -> its nodes, from WalkPath.
  std::unordered_map<std::string, std::vector<uint32_t>> paths_;
  std::string key_;  // the lookup key of Intern and AddPath, kept to reuse its memory
  std::vector<uint32_t> last_ids_;  // the previous file's frame index -> id (UINT32_MAX: unused)
  struct RankStack {
    int32_t rank;
    std::string thread;
    std::vector<uint32_t> frames;  // innermost first
    std::string error;
  };
  std::vector<RankStack> main_stacks_;
  std::vector<std::string> process_names_;  // members from kFirstProcessMember on
};

enum class Origin { kPython, kInterpreter, kCollective, kNative, kThread, kError, kXtimer };

// A frame's colour in the flame graph: Python frames; then native frames by their owner
// (stacktrace/frame_owner.h): the CPython interpreter, NVIDIA's libraries (NCCL, CUDA),
// xtimer's own, other native code.
Origin OriginOf(const Frame& frame);

// "0-2,4-7" for {0,1,2,4,5,6,7}; `ranks` ascending.
std::string RankRanges(const std::vector<int32_t>& ranks);
// The same for a RankSet (a template, so that RankRanges({0, 1}) still means the list).
std::string RankSetRanges(const RankSet& ranks);
template <class Set, class = std::enable_if_t<std::is_same<Set, RankSet>::value>>
std::string RankRanges(const Set& ranks) {
  return RankSetRanges(ranks);
}

// A frame's label: python "function (file.py:88)" (the file's base name), native "function"
// ("??" when unnamed, " (file:line)" when the line is known), thread "thread NAME",
// error "[NAME]".
std::string FrameLabel(const Frame& frame);

// Folded stacks (flamegraph.pl, speedscope): one line per node where ranks' stacks end,
// "thread NAME;outermost;...;innermost [ranks 0-2,4-7] COUNT", COUNT the number of those ranks.
// Lines in depth-first order, children widest first. ';' in labels becomes ':'.
// At most `max_bytes` (whole lines; *cut, when given, counts the lines written and left out).
std::string FoldedStacks(const StackTree& tree, size_t max_bytes = kMaxFoldedBytes,
                         OutputCut* cut = nullptr);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_MERGE_H_

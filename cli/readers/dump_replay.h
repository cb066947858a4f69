// The second pass over a dump's timeline files (cli/dump_reader.h reads them first): each chosen
// rank's events are read again from where the first pass found its intact blocks and summarised
// to Arrivals on the aligned clock, either whole, rank by rank (ReadArrivals: the ranks then
// hold every arrival), or all ranks together a time window at a time into an
// analysis::AnalysisStream (AnalyzeDump: memory is a window of instances, not the dump).
#ifndef XTIMER_CLI_READERS_DUMP_REPLAY_H_
#define XTIMER_CLI_READERS_DUMP_REPLAY_H_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/stream.h"
#include "timeline/format.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {

// The communicator sizes of one file's metadata, looked up per event (a file has few
// communicators, and consecutive events mostly share one).
class CommSizes {
 public:
  CommSizes() = default;
  explicit CommSizes(const std::vector<timeline::CommInfo>& comms) {
    for (const timeline::CommInfo& c : comms) sizes_.emplace_back(c.id, c.size);
    std::sort(sizes_.begin(), sizes_.end());
  }
  int32_t Of(uint64_t comm_id) {
    if (comm_id == 0) return 0;
    if (comm_id == last_id_) return last_size_;
    auto it = std::lower_bound(sizes_.begin(), sizes_.end(), std::make_pair(comm_id, INT32_MIN));
    last_id_ = comm_id;
    last_size_ = it != sizes_.end() && it->first == comm_id ? it->second : 0;
    return last_size_;
  }

 private:
  std::vector<std::pair<uint64_t, int32_t>> sizes_;
  uint64_t last_id_ = 0;
  int32_t last_size_ = 0;
};

// One chosen rank's file, as the first pass left it.
struct RankReplay {
  std::string path;
  size_t input = 0;       // its index in DumpInput::ranks
  int64_t offset_ns = 0;  // added to its node's times (clock alignment)
  std::vector<std::pair<uint64_t, uint32_t>> blocks;  // intact blocks: events' offset, count
  CommSizes sizes;
  analysis::RankPlan plan;  // its arrivals' communicators and highest seqs
  uint64_t arrivals = 0;
  int64_t first_end_ns = 0, last_end_ns = 0;  // its arrivals' ends, node clock; 0: none
};

// Arrivals a round of the stream reads across all ranks, about (the round's time span is the
// dump's divided accordingly): its arrivals and the instances not yet folded stay in memory.
constexpr uint64_t kArrivalsPerRound = 128 * 1024;

struct DumpReplay {
  std::vector<RankReplay> ranks;
  int jobs = 0;  // reader threads; 0: hardware threads
  uint64_t arrivals_per_round = kArrivalsPerRound;
};

// Every replayed rank's arrivals, whole, into (*ranks)[replay.input].arrivals.
void ReadArrivals(const DumpReplay& replay, std::vector<analysis::RankInput>* ranks);

// analysis::Analyze of `ranks` (the dump's, without arrivals) with their replayed arrivals:
// streamed, or, when a rank's ops are out of order beyond the stream's window or its
// arrivals cannot be streamed, read whole and analysed at once (the same report either way).
// *streamed (when given) says which.
analysis::Report AnalyzeDump(const DumpReplay& replay, std::vector<analysis::RankInput> ranks,
                             const analysis::Options& options, bool* streamed = nullptr);

// Ops a streamed rank may hold back to put them in completion order; a file more out of order
// is analysed whole (docs/analyze-cli.md).
constexpr size_t kStreamWindow = 128;

// One timeline event as the analysis library takes it. `comm_size` is the communicator's size
// from the file's metadata (0 when unknown); the element count is derived from the bytes.
analysis::TimedOp TimedOpOf(const timeline::EventRecord& e, int32_t comm_size);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_DUMP_REPLAY_H_

#include "cli/readers/dump_replay.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <limits>
#include <memory>
#include <thread>

#include "util/parallel_for.h"
#include "cli/readers/file_reads.h"
#include "cli/readers/rank_clock.h"
#include "opmath/op_math.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

using timeline::EventRecord;

// Events a streamed rank reads at once (a block holds up to timeline::kEventsPerBlock): with
// the window, what each rank holds between rounds (about 20 KB).
constexpr uint32_t kChunkEvents = 128;

// The elements of a collective's or send/recv's send buffer (opmath's table read backwards).
uint64_t CountOf(uint16_t op, uint8_t dtype, uint64_t bytes, int32_t comm_size) {
  const int blocks = opmath::SendBlocks(op, comm_size);
  if (blocks <= 0) return 0;  // not communication (most events)
  const int elem = opmath::ElementSize(static_cast<format::DType>(dtype));
  return elem > 0 ? bytes / static_cast<uint64_t>(elem * blocks) : 0;
}

// One rank's file read again from the first pass's block list, events within the limits
// converted to TimedOps and summarised.
class Replayer {
 public:
  Replayer(const RankReplay& r, size_t window) : r_(r), summarizer_(window) {}
  ~Replayer() { Close(); }

  // Reads on until an event ending at `until_ns` or later (aligned clock) was read, or to the end;
  // appends the arrivals made to *out (all of them at the end), aligned. False when the file
  // cannot be read as the first pass read it.
  bool Advance(int64_t until_ns, size_t chunk, bool keep_open,
               std::vector<analysis::Arrival>* out) {
    if (fd_ < 0 && block_ < r_.blocks.size()) {
      fd_ = open(r_.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) return false;
      if (!passed_) CountEventPass();  // reopened between rounds: the same pass
      passed_ = true;
    }
    bool reached = false;
    while (block_ < r_.blocks.size() && !reached) {
      const uint32_t count = r_.blocks[block_].second;
      const uint32_t n = static_cast<uint32_t>(std::min<size_t>(chunk, count - pos_));
      if (!Read(n, &reached, until_ns)) return false;
      pos_ += n;
      if (pos_ == count) {
        ++block_;
        pos_ = 0;
      }
    }
    const bool end = block_ == r_.blocks.size();
    summarizer_.Drain(out, end);
    if (r_.offset_ns != 0) {
      for (size_t i = drained_; i < out->size(); ++i) ShiftArrival(r_.offset_ns, &(*out)[i]);
    }
    drained_ = out->size();
    if (end || !keep_open) Close();
    return true;
  }

  bool in_order() const { return summarizer_.in_order(); }
  void Restart() { drained_ = 0; }

 private:
  bool Read(uint32_t n, bool* reached, int64_t until_ns) {
    // Per reader thread, not per rank: thousands of ranks are read in turns.
    thread_local std::vector<EventRecord> events;
    thread_local std::vector<analysis::TimedOp> ops;
    events.resize(n);
    const size_t bytes = static_cast<size_t>(n) * sizeof(EventRecord);
    const uint64_t at = r_.blocks[block_].first + static_cast<uint64_t>(pos_) * sizeof(EventRecord);
    if (pread(fd_, events.data(), bytes, static_cast<off_t>(at)) != static_cast<ssize_t>(bytes)) {
      return false;
    }
    ops.clear();
    for (const EventRecord& e : events) {
      // Left out as the first pass left them out (checked again: the file is outside input).
      if (!timeline::EventWithinLimits(e)) continue;
      ops.push_back(TimedOpOf(e, sizes_.Of(e.comm_id)));
      if (e.gpu_start_ns + e.duration_ns + r_.offset_ns >= until_ns) *reached = true;
    }
    summarizer_.AddBlock(&ops);
    return true;
  }

  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  const RankReplay& r_;
  CommSizes sizes_ = r_.sizes;
  analysis::OrderedRankSummarizer summarizer_;
  size_t block_ = 0;
  uint32_t pos_ = 0;
  size_t drained_ = 0;
  int fd_ = -1;
  bool passed_ = false;  // counted (file_reads.h)
};

// Whether `files` more descriptors may stay open (raising the soft limit toward the hard one).
bool CanKeepOpen(size_t files) {
  rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  const rlim_t want = static_cast<rlim_t>(files) + 64;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want) return false;
    lim.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  }
  return true;
}

// The rounds' time steps: the span of the ranks' arrival ends (aligned), cut so that a round
// reads about replay.arrivals_per_round arrivals.
std::vector<int64_t> RoundEnds(const DumpReplay& replay) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  uint64_t arrivals = 0;
  for (const RankReplay& r : replay.ranks) {
    arrivals += r.arrivals;
    if (r.arrivals == 0) continue;
    lo = std::min(lo, r.first_end_ns + r.offset_ns);
    hi = std::max(hi, r.last_end_ns + r.offset_ns);
  }
  std::vector<int64_t> ends;
  const uint64_t rounds =
      std::max<uint64_t>(1, arrivals / std::max<uint64_t>(1, replay.arrivals_per_round));
  if (arrivals > 0 && hi > lo) {
    const double step = static_cast<double>(hi - lo) / static_cast<double>(rounds);
    for (uint64_t i = 1; i < rounds; ++i) ends.push_back(lo + static_cast<int64_t>(step * i));
  }
  ends.push_back(std::numeric_limits<int64_t>::max());
  return ends;
}

// One round's arrivals of every rank, and whether each rank's could be read in order.
struct Round {
  std::vector<std::vector<analysis::Arrival>> made;
  std::vector<uint8_t> ok;
};

// Gives a round to the stream and folds; false when a rank's arrivals cannot be streamed.
bool Feed(const DumpReplay& replay, const Round& round, analysis::AnalysisStream* stream) {
  for (size_t i = 0; i < round.made.size(); ++i) {
    if (!round.ok[i] || !stream->Add(replay.ranks[i].input, round.made[i])) return false;
  }
  stream->Fold();
  return true;
}

// Streams every rank's arrivals into `stream`, round by round: while the readers read a round,
// one more thread folds the round before. False when a rank's arrivals cannot be streamed.
bool Stream(const DumpReplay& replay, analysis::AnalysisStream* stream) {
  const size_t n = replay.ranks.size();
  std::vector<std::unique_ptr<Replayer>> readers(n);
  for (size_t i = 0; i < n; ++i) readers[i].reset(new Replayer(replay.ranks[i], kStreamWindow));
  Round rounds[2];
  for (Round& r : rounds) {
    r.made.resize(n);
    r.ok.assign(n, 1);
  }
  const bool keep_open = CanKeepOpen(n);
  bool fed = true;
  size_t index = 0;
  for (int64_t until : RoundEnds(replay)) {
    Round& read = rounds[index % 2];
    std::thread folder;
    if (index > 0) {
      folder = std::thread([&] { fed = Feed(replay, rounds[(index - 1) % 2], stream); });
    }
    ParallelFor(n, replay.jobs, [&](size_t i) {
      read.made[i].clear();
      readers[i]->Restart();
      read.ok[i] = readers[i]->Advance(until, kChunkEvents, keep_open, &read.made[i]) &&
                   readers[i]->in_order();
    });
    if (folder.joinable()) folder.join();
    if (!fed) return false;
    ++index;
  }
  return index == 0 || Feed(replay, rounds[(index - 1) % 2], stream);
}

}  // namespace

analysis::TimedOp TimedOpOf(const EventRecord& e, int32_t comm_size) {
  return analysis::TimedOpOfRecord(e, comm_size, CountOf(e.op, e.dtype, e.bytes, comm_size));
}

void ReadArrivals(const DumpReplay& replay, std::vector<analysis::RankInput>* ranks) {
  ParallelFor(replay.ranks.size(), replay.jobs, [&](size_t i) {
    const RankReplay& r = replay.ranks[i];
    Replayer reader(r, analysis::OrderedRankSummarizer::kDefaultWindow);
    std::vector<analysis::Arrival>& out = (*ranks)[r.input].arrivals;
    out.clear();
    out.reserve(r.arrivals);
    // Whole blocks, as the first pass read them: the summary is the one of a single pass.
    reader.Advance(std::numeric_limits<int64_t>::max(), timeline::kEventsPerBlock, false, &out);
    auto by_start = [](const analysis::Arrival& x, const analysis::Arrival& y) {
      return x.start_ns < y.start_ns;
    };
    if (!std::is_sorted(out.begin(), out.end(), by_start)) {
      std::stable_sort(out.begin(), out.end(), by_start);
    }
  });
}

analysis::Report AnalyzeDump(const DumpReplay& replay, std::vector<analysis::RankInput> ranks,
                             const analysis::Options& options, bool* streamed) {
  std::vector<analysis::RankPlan> plans(ranks.size());
  for (const RankReplay& r : replay.ranks) plans[r.input] = r.plan;
  {
    analysis::AnalysisStream stream(ranks, plans, options);
    const bool ok = Stream(replay, &stream);
    if (streamed != nullptr) *streamed = ok;
    if (ok) return stream.Finish();
  }
  ReadArrivals(replay, &ranks);
  return analysis::Analyze(ranks, options);
}

}  // namespace cli
}  // namespace xtimer

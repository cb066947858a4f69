// Internal to the converter (timeline/converter.h): what pass 1 learned of each timeline file, and
// pass 2, which encodes one rank's file as its part of the Perfetto trace (its process track, a
// host track and one track per stream, with their slices, instants and flows).
#ifndef XTIMER_TIMELINE_RANK_ENCODER_H_
#define XTIMER_TIMELINE_RANK_ENCODER_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "timeline/clock_align.h"
#include "timeline/converter.h"
#include "timeline/flows.h"
#include "timeline/packet_compressor.h"
#include "timeline/slice_args.h"
#include "timeline/steps_track.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

struct StreamInfo {
  int16_t device;
  uint64_t stream;
  uint32_t kinds;   // bit per OpKind
  uint32_t number;  // the stream's number in its track name (StreamNumbers)
};

struct FileInfo {
  std::string path;
  std::string dir;
  bool ok = false;
  std::string error;  // rejected: why; recovered: why it stopped
  Metadata meta;      // strings and comms dropped after pass 1
  uint64_t events = 0;
  uint64_t rejected = 0;            // events left out for breaking a limit (timeline/format.h)
  std::vector<StreamInfo> streams;  // sorted by (device, stream)
  bool has_host = false;
  uint32_t nvtx_tracks = 0;  // host tracks of its NVTX events (nvtx_tracks.h)
  StepsTrack steps;          // its steps track, after the NVTX ones (none: no steps)
  std::string node;
  int node_index = -1;
  std::vector<CollectiveEnd> ends;  // pass 1 only: sorted, one per collective
  // Communicators as this file knows them (pass 1 only): id, size, (comm rank, global rank).
  struct CommSeen {
    uint64_t id;
    int32_t size;
    std::vector<std::pair<int32_t, int32_t>> members;
  };
  std::vector<CommSeen> comms;
  std::vector<P2POp> p2p;  // pass 1 only: its sends and receives, sorted
};

// How receives pair with sends across files (flows.h), and each send's start, on the aligned
// clock: a receive that reads as ending up to kP2PNoiseNs before its send began (timer noise,
// clock alignment error) gets its arrival just after the send's start, so that the flow still
// runs forward; one that ends longer before is not its send's receive, and gets no arrival.
constexpr int64_t kP2PNoiseNs = 100000;

struct P2PMatch {
  P2PShifts shifts;
  std::vector<std::pair<uint64_t, int64_t>> send_start;  // flow id -> start, sorted

  // Where flow `id` arrives for a receive ending at recv_end; -1: nowhere.
  int64_t Arrival(uint64_t id, int64_t recv_end) const {
    auto it = std::lower_bound(send_start.begin(), send_start.end(),
                               std::make_pair(id, std::numeric_limits<int64_t>::min()));
    if (it == send_start.end() || it->first != id || it->second < recv_end) return recv_end;
    return it->second - recv_end <= kP2PNoiseNs ? it->second + 1 : -1;
  }
};

struct RankContext {
  const FileInfo* file;
  int ordinal;         // position in the output order
  uint32_t first_seq;  // first sequence id of this rank
  int pid;
  int64_t offset;     // ns added to this node's times
  std::string label;  // group label
  int sort_index;
  const ConvertOptions* options;
  const CommTable* comms;
  const P2PMatch* p2p;
};

struct RankResult {
  std::string bytes;
  uint64_t events = 0;
  uint64_t truncated = 0;  // overlaps longer than kOverlapNoiseNs (rank_encoder.cc)
  std::string warning;
};

// Reads the rank's file again and encodes it (compressed when `compressor` is set).
RankResult EncodeRank(const RankContext& ctx, PacketCompressor* compressor);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_RANK_ENCODER_H_

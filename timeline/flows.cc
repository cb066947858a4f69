#include "timeline/flows.h"

#include <algorithm>
#include <tuple>

#include "format/record.h"

namespace xtimer {
namespace timeline {
namespace {

constexpr uint64_t kKindMask = 3ull << 62;
constexpr uint64_t kCollectiveBits = 2ull << 62;
constexpr uint64_t kP2PBits = 3ull << 62;

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

}  // namespace

uint64_t CollectiveFlowId(uint64_t comm, uint64_t seq) {
  return (Mix(comm, seq) & ~kKindMask) | kCollectiveBits;
}

uint64_t P2PFlowId(uint64_t comm, int32_t sender, int32_t receiver, uint64_t n) {
  const uint64_t pair = (static_cast<uint64_t>(static_cast<uint32_t>(sender)) << 32) |
                        static_cast<uint32_t>(receiver);
  return (Mix(Mix(comm, pair), n) & ~kKindMask) | kP2PBits;
}

std::unordered_map<uint32_t, uint64_t> P2PFlowIds(const std::vector<EventRecord>& events,
                                                  const std::vector<CommInfo>& comms) {
  using format::Operation;
  std::unordered_map<uint64_t, int32_t> my_rank;
  for (const CommInfo& c : comms) {
    if (c.id != 0 && c.rank >= 0) my_rank[c.id] = c.rank;
  }
  // (comm, op, peer, seq, index) of every send and receive we can place.
  std::vector<std::tuple<uint64_t, uint16_t, int32_t, uint64_t, uint32_t>> p2p;
  for (uint32_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    if (e.kind != static_cast<uint8_t>(format::OpKind::kP2P) || e.peer < 0 ||
        my_rank.count(e.comm_id) == 0) {
      continue;
    }
    if (e.op == static_cast<uint16_t>(Operation::kSend) ||
        e.op == static_cast<uint16_t>(Operation::kRecv)) {
      p2p.emplace_back(e.comm_id, e.op, e.peer, e.seq, i);
    }
  }
  std::sort(p2p.begin(), p2p.end());
  std::unordered_map<uint32_t, uint64_t> ids;
  uint64_t n = 0;
  for (size_t i = 0; i < p2p.size(); ++i) {
    const auto& [comm, op, peer, seq, index] = p2p[i];
    if (i > 0 && (std::get<0>(p2p[i - 1]) != comm || std::get<1>(p2p[i - 1]) != op ||
                  std::get<2>(p2p[i - 1]) != peer)) {
      n = 0;
    }
    const int32_t me = my_rank[comm];
    const bool send = op == static_cast<uint16_t>(Operation::kSend);
    ids[index] = send ? P2PFlowId(comm, me, peer, n) : P2PFlowId(comm, peer, me, n);
    ++n;
  }
  return ids;
}

}  // namespace timeline
}  // namespace xtimer

#include "timeline/flows.h"

#include <algorithm>
#include <cstdlib>
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

std::vector<std::pair<uint32_t, P2POp>> P2POps(const std::vector<EventRecord>& events,
                                               const std::vector<CommInfo>& comms) {
  using format::Operation;
  std::unordered_map<uint64_t, int32_t> my_rank;
  for (const CommInfo& c : comms) {
    if (c.id != 0 && c.rank >= 0) my_rank[c.id] = c.rank;
  }
  std::vector<std::pair<uint32_t, P2POp>> ops;
  for (uint32_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    if (e.kind != static_cast<uint8_t>(format::OpKind::kP2P) || e.peer < 0) continue;
    auto me = my_rank.find(e.comm_id);
    if (me == my_rank.end()) continue;
    const bool send = e.op == static_cast<uint16_t>(Operation::kSend);
    if (!send && e.op != static_cast<uint16_t>(Operation::kRecv)) continue;
    P2POp op{send ? P2PPair{e.comm_id, me->second, e.peer} : P2PPair{e.comm_id, e.peer, me->second},
             !send, e.seq, e.gpu_start_ns, e.gpu_start_ns + std::max<int64_t>(e.duration_ns, 0)};
    ops.push_back({i, op});
  }
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  return ops;
}

namespace {

// Median of |send end - receive end| over the positions both lists hold when receive j is send
// j + shift; -1 when none overlap.
int64_t MedianGap(const std::vector<int64_t>& sends, const std::vector<int64_t>& recvs,
                  int64_t shift, std::vector<int64_t>* gaps) {
  gaps->clear();
  for (int64_t j = std::max<int64_t>(0, -shift);
       j < static_cast<int64_t>(recvs.size()) && j + shift < static_cast<int64_t>(sends.size());
       ++j) {
    gaps->push_back(std::llabs(sends[j + shift] - recvs[j]));
  }
  if (gaps->empty()) return -1;
  std::nth_element(gaps->begin(), gaps->begin() + gaps->size() / 2, gaps->end());
  return (*gaps)[gaps->size() / 2];
}

constexpr size_t kShiftCandidates = 8;  // the first sends tried as anchors

}  // namespace

P2PShifts MatchP2P(const std::map<P2PPair, std::vector<int64_t>>& sends,
                   const std::map<P2PPair, std::vector<int64_t>>& receives) {
  P2PShifts shifts;
  std::vector<int64_t> gaps;
  for (const auto& [pair, s] : sends) {
    auto r = receives.find(pair);
    if (r == receives.end() || s.empty() || r->second.empty()) continue;
    const std::vector<int64_t>& v = r->second;
    int64_t best_shift = 0, best_gap = -1;
    for (size_t i = 0; i < s.size() && i < kShiftCandidates; ++i) {
      size_t nearest = 0;
      for (size_t j = 1; j < v.size(); ++j) {
        if (std::llabs(v[j] - s[i]) < std::llabs(v[nearest] - s[i])) nearest = j;
      }
      const int64_t shift = static_cast<int64_t>(i) - static_cast<int64_t>(nearest);
      const int64_t gap = MedianGap(s, v, shift, &gaps);
      if (gap >= 0 && (best_gap < 0 || gap < best_gap ||
                       (gap == best_gap && std::llabs(shift) < std::llabs(best_shift)))) {
        best_gap = gap;
        best_shift = shift;
      }
    }
    shifts[pair] = best_shift;
  }
  return shifts;
}

std::vector<std::pair<size_t, uint64_t>> P2PNumbered(const std::vector<P2POp>& ops,
                                                     const P2PShifts& shifts) {
  std::vector<std::pair<size_t, uint64_t>> ids;
  int64_t n = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2POp& op = ops[i];
    if (i > 0 && (ops[i - 1].pair != op.pair || ops[i - 1].recv != op.recv)) n = 0;
    int64_t number = n++;
    if (op.recv) {
      auto shift = shifts.find(op.pair);
      if (shift != shifts.end()) number += shift->second;
      if (number < 0) continue;  // its send is not in the sender's file
    }
    const auto& [comm, sender, receiver] = op.pair;
    ids.push_back({i, P2PFlowId(comm, sender, receiver, static_cast<uint64_t>(number))});
  }
  return ids;
}

std::unordered_map<uint32_t, uint64_t> P2PFlowIds(const std::vector<EventRecord>& events,
                                                  const std::vector<CommInfo>& comms,
                                                  const P2PShifts& shifts) {
  const std::vector<std::pair<uint32_t, P2POp>> indexed = P2POps(events, comms);
  std::vector<P2POp> ops;
  ops.reserve(indexed.size());
  for (const auto& op : indexed) ops.push_back(op.second);
  std::unordered_map<uint32_t, uint64_t> ids;
  for (const auto& [i, id] : P2PNumbered(ops, shifts)) ids[indexed[i].first] = id;
  return ids;
}

}  // namespace timeline
}  // namespace xtimer

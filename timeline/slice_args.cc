#include "timeline/slice_args.h"

#include <algorithm>
#include <cstdio>

#include "format/record.h"
#include "opmath/op_math.h"

namespace xtimer {
namespace timeline {
namespace {

using format::OpKind;

std::string Key(char tag, const void* p, size_t n) {
  std::string k(1, tag);
  k.append(static_cast<const char*>(p), n);
  return k;
}

// `peer`: the peer's global rank where the files name it; `peer_comm_rank`: its rank in the
// communicator (what NCCL was given).
void AddPeer(Sequence* s, int32_t peer, const CommMembers* comm) {
  if (comm != nullptr) {
    auto g = comm->global.find(peer);
    if (g != comm->global.end()) s->ArgI("peer", g->second);
  }
  s->ArgI("peer_comm_rank", peer);
}

}  // namespace

std::string CommHex(uint64_t id) {
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

std::string CommLabel(uint64_t id, const CommTable& comms) {
  auto it = comms.find(id);
  if (it == comms.end()) return CommHex(id);
  const CommMembers& c = it->second;
  std::string label =
      CommHex(id) + " (" + std::to_string(c.size) + (c.size == 1 ? " rank" : " ranks");
  constexpr int32_t kShown = 16;
  for (int32_t i = 0; i < c.size && i < kShown; ++i) {
    auto g = c.global.find(i);
    label += (i == 0 ? ": " : " ") + (g != c.global.end() ? std::to_string(g->second) : "?");
  }
  if (c.size > kShown) label += " … " + std::to_string(c.size - kShown) + " more";
  return label + ")";
}

void AddArgs(Sequence* s, const EventRecord& e, const CommTable& comms) {
  double dur = static_cast<double>(std::max<int64_t>(e.duration_ns, 1));
  auto dtype = [&] {
    return s->CachedArgString(Key('d', &e.dtype, 1), [&] {
      return std::string(format::DTypeName(static_cast<format::DType>(e.dtype)));
    });
  };
  switch (static_cast<OpKind>(e.kind)) {
    case OpKind::kMatmul: {
      int64_t key[5] = {e.m, e.n, e.k, e.batch,
                        e.flags & (format::kFlagTransA | format::kFlagTransB)};
      s->ArgSIid("shape", s->CachedArgString(Key('s', key, sizeof(key)), [&] {
        char shape[160];
        std::snprintf(shape, sizeof(shape), "m=%lld n=%lld k=%lld batch=%lld %c%c",
                      static_cast<long long>(e.m), static_cast<long long>(e.n),
                      static_cast<long long>(e.k), static_cast<long long>(e.batch),
                      (e.flags & format::kFlagTransA) ? 'T' : 'N',
                      (e.flags & format::kFlagTransB) ? 'T' : 'N');
        return std::string(shape);
      }));
      s->ArgSIid("dtype", dtype());
      double flop = opmath::MatmulFlop(e.m, e.n, e.k, e.batch);
      s->ArgRate("tflops", flop / dur / 1e3);
      break;
    }
    case OpKind::kCollective:
    case OpKind::kP2P: {
      auto it = comms.find(e.comm_id);
      int n = it == comms.end() ? 0 : it->second.size;
      s->ArgSIid("comm", s->CachedArgString(Key('c', &e.comm_id, 8),
                                            [&] { return CommLabel(e.comm_id, comms); }));
      s->ArgU("seq", e.seq);
      s->ArgU("bytes", e.bytes);
      s->ArgSIid("dtype", dtype());
      s->ArgRate("busbw_gbps", opmath::BusBytes(e.op, e.bytes, n) / dur);
      if (e.peer >= 0) AddPeer(s, e.peer, it == comms.end() ? nullptr : &it->second);
      if (e.root >= 0) s->ArgI("root", e.root);
      break;
    }
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      s->ArgU("bytes", e.bytes);
      s->ArgRate("gbps", static_cast<double>(e.bytes) / dur);
      break;
    default:
      break;
  }
}

}  // namespace timeline
}  // namespace xtimer

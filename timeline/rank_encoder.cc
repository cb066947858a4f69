#include "timeline/rank_encoder.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/record.h"
#include "timeline/host_links.h"
#include "timeline/nvtx_tracks.h"
#include "timeline/packet_sequence.h"
#include "timeline/proto_wire.h"
#include "util/kernel_name.h"

namespace xtimer {
namespace timeline {
namespace {

using format::Operation;
using format::OpKind;

std::string KindsLabel(uint32_t kinds) {
  std::string s;
  for (int k = 1; k <= format::kOpKindMax; ++k) {
    if (kinds & (1u << k)) {
      if (!s.empty()) s += ", ";
      s += format::OpKindName(static_cast<OpKind>(k));
    }
  }
  return s;
}

// What a track item draws: an event's slice, its launch instant (host track), or the instant
// at a receive's end where the send's flow arrives.
enum class Mark : uint8_t { kSlice, kLaunch, kArrival };

struct Item {
  int64_t begin;
  int64_t end;     // == begin for instants
  uint32_t index;  // event index in the rank
  Mark mark;
};

// The full name of an event's kernel ("" when it has none).
const std::string& FullName(const EventRecord& e, const Metadata& m) {
  static const std::string kNone;
  return e.name != 0 && e.name < m.strings.size() ? m.strings[e.name] : kNone;
}

// A slice's name: the kernel's short name (util/kernel_name.h), else the operation's.
std::string EventName(const EventRecord& e, const Metadata& m) {
  const std::string& full = FullName(e, m);
  if (!full.empty()) return util::ShortKernelName(full);
  return format::OperationName(static_cast<format::Operation>(e.op));
}

// Operations on one stream run one after another, but their measured times can overlap by a few
// nanoseconds (timer resolution; a real GPU's events resolve about 0.5 us). Overlaps up to this
// much are corrected silently; longer ones are corrected too and counted in a warning.
constexpr int64_t kOverlapNoiseNs = 1000;

// Emits the items of one track. A slice inside another nests; a slice that starts inside open
// slices but ends after them ends them where it begins (Perfetto slices on a track must nest).
template <typename EmitFn>
void EmitTrack(std::vector<Item>* items, Sequence* s, uint64_t* truncated, EmitFn emit) {
  std::sort(items->begin(), items->end(), [](const Item& a, const Item& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end > b.end;
    return a.index < b.index;
  });
  std::vector<int64_t> open;  // ends of the open slices
  auto end = [&](int64_t ts) {
    s->End(ts);
    open.pop_back();
  };
  for (const Item& it : *items) {
    while (!open.empty() && open.back() <= it.begin) end(open.back());
    while (!open.empty() && it.end > open.back()) {
      if (open.back() - it.begin > kOverlapNoiseNs) ++*truncated;
      end(it.begin);
    }
    emit(it);
    if (it.mark == Mark::kSlice) open.push_back(it.end);
  }
  while (!open.empty()) end(open.back());
}

// One rank's encoding: its events read back, where its packets go, and what all its tracks share.
struct RankEncoding {
  RankEncoding(const RankContext& c, std::string* o) : ctx(c), opt(*c.options), out(o) {}
  const RankContext& ctx;
  const ConvertOptions& opt;
  std::string* out;
  std::vector<EventRecord> events;
  Metadata meta;
  uint64_t base_uuid = 0;    // the process track's; its thread tracks follow
  uint64_t launch_base = 0;  // flow ids of launch -> GPU flows: launch_base | event index
  // A send's slice starts the flow to its receive; the flow ends on an instant at the receive's
  // end (when the data has arrived), on the receiver's stream. Perfetto draws a flow from the
  // slice that begins first, so ending it on the receive's own slice would draw a receive posted
  // before its send as receive -> send.
  std::unordered_map<uint32_t, uint64_t> p2p_flows;  // event index -> flow id
  // Host slice -> GPU flows (host_links.h): ids host_base | event index, begun by the NVTX range
  // the op was launched in and ended by the op's slice.
  uint64_t host_base = 0;
  std::vector<bool> host_linked;                                  // by event index
  std::unordered_map<uint32_t, std::vector<uint32_t>> launched;  // NVTX entry -> event indexes
  // Name id -> whether its slices show a shorter name than the full one (then a `signature`
  // argument carries the full name).
  std::unordered_map<uint32_t, bool> shortened;
  RankResult* res = nullptr;
};

void WriteProcessTrack(const RankEncoding& enc) {
  const RankContext& ctx = enc.ctx;
  const int rank = ctx.file->meta.rank;
  std::string td, pd;
  wire::U64(&pd, kPdPid, ctx.pid);
  wire::U64(&pd, kPdSortIndex, ctx.sort_index);
  std::string name = (rank >= 0 ? "rank " + std::to_string(rank)
                                : "unknown rank pid " + std::to_string(ctx.file->meta.pid)) +
                     " (" + ctx.file->node + ")";
  wire::Bytes(&pd, kPdName, name);
  if (!ctx.label.empty()) wire::Bytes(&pd, kPdLabels, ctx.label);
  if (!enc.meta.job.empty()) wire::Bytes(&pd, kPdLabels, "job " + enc.meta.job);
  wire::U64(&td, kTdUuid, enc.base_uuid);
  wire::Bytes(&td, kTdProcess, pd);
  std::string p;
  wire::Bytes(&p, kPktTrackDescriptor, td);
  wire::Bytes(enc.out, kTracePacket, p);
}

void WriteThreadTrack(const RankEncoding& enc, uint64_t uuid, int tid, const std::string& name) {
  std::string td, th, p;
  wire::U64(&th, kThPid, enc.ctx.pid);
  wire::U64(&th, kThTid, tid);
  wire::Bytes(&th, kThName, name);
  wire::U64(&td, kTdUuid, uuid);
  wire::U64(&td, kTdParent, enc.base_uuid);
  wire::Bytes(&td, kTdThread, th);
  wire::Bytes(&p, kPktTrackDescriptor, td);
  wire::Bytes(enc.out, kTracePacket, p);
}

// Splits the events into tracks: index 0 = host track, 1.. = streams (pass-1 order).
std::vector<std::vector<Item>> SplitTracks(const RankEncoding& enc) {
  const std::vector<StreamInfo>& streams = enc.ctx.file->streams;
  std::vector<std::vector<Item>> tracks(streams.size() + 1);
  const int64_t off = enc.ctx.offset;
  for (uint32_t i = 0; i < enc.events.size(); ++i) {
    const EventRecord& e = enc.events[i];
    int64_t b = e.gpu_start_ns + off;
    int64_t en = b + std::max<int64_t>(e.duration_ns, 0);
    if (e.kind == static_cast<uint8_t>(OpKind::kHostSync)) {
      tracks[0].push_back({b, en, i, Mark::kSlice});
      continue;
    }
    auto it = std::lower_bound(
        streams.begin(), streams.end(), e, [](const StreamInfo& s, const EventRecord& ev) {
          return s.device != ev.device ? s.device < ev.device : s.stream < ev.stream;
        });
    size_t t = 1 + static_cast<size_t>(it - streams.begin());
    if (it == streams.end() || it->device != e.device || it->stream != e.stream) continue;
    auto p2p = enc.opt.flows ? enc.p2p_flows.find(i) : enc.p2p_flows.end();
    tracks[t].push_back({b, en, i, Mark::kSlice});
    if (p2p != enc.p2p_flows.end() && e.op == static_cast<uint16_t>(Operation::kRecv)) {
      const int64_t arrival = enc.ctx.p2p->Arrival(p2p->second, en);
      if (arrival >= 0) tracks[t].push_back({arrival, arrival, i, Mark::kArrival});
    }
    if (enc.opt.launches && e.cpu_launch_ns > 0) {
      // A launch cannot follow its GPU start; where the two clocks say so (by the GPU-to-host
      // alignment error, about a microsecond) the instant is put at the start, so that the
      // launch flow runs forward in time (Perfetto drops flows that run backwards).
      int64_t c = std::min(e.cpu_launch_ns, e.gpu_start_ns) + off;
      tracks[0].push_back({c, c, i, Mark::kLaunch});
    }
  }
  return tracks;
}

// One item of track `t`: a launch or arrival instant, or a slice with its arguments and flows.
void EmitItem(RankEncoding* enc, Sequence* seq, size_t t, const Item& it) {
  const ConvertOptions& opt = enc->opt;
  const EventRecord& e = enc->events[it.index];
  const bool arrival = it.mark == Mark::kArrival;
  uint64_t name = seq->CachedName(
      (static_cast<uint64_t>(arrival) << 63) | (static_cast<uint64_t>(e.name) << 16) | e.op,
      [&] { return EventName(e, enc->meta) + (arrival ? " done" : ""); });
  uint64_t cat = seq->CachedCategory(e.kind);
  if (it.mark == Mark::kLaunch) {
    seq->Flow(enc->launch_base | it.index);
    seq->Instant(it.begin, name, cat);
    return;
  }
  if (arrival) {
    seq->TerminatingFlow(enc->p2p_flows.at(it.index));
    seq->Instant(it.begin, name, cat);
    return;
  }
  if (opt.args) {
    AddArgs(seq, e, *enc->ctx.comms);
    // The full name one click away, where the slice shows a shorter one.
    const std::string& full = FullName(e, enc->meta);
    if (!full.empty()) {
      auto it = enc->shortened.find(e.name);
      if (it == enc->shortened.end()) {
        it = enc->shortened.emplace(e.name, full != util::ShortKernelName(full)).first;
      }
      if (it->second) {
        std::string key(1, 'N');  // slice_args.cc's keys use other tags
        key.append(reinterpret_cast<const char*>(&e.name), sizeof(e.name));
        seq->ArgSIid("signature", seq->CachedArgString(key, [&] { return full; }));
      }
    }
  }
  if (opt.flows && e.kind == static_cast<uint8_t>(OpKind::kCollective) && e.comm_id != 0) {
    seq->Flow(CollectiveFlowId(e.comm_id, e.seq));
  }
  if (e.op == static_cast<uint16_t>(Operation::kSend)) {
    auto p2p = enc->p2p_flows.find(it.index);
    if (opt.flows && p2p != enc->p2p_flows.end()) seq->Flow(p2p->second);
  }
  if (opt.launches && t != 0 && e.cpu_launch_ns > 0) {
    seq->TerminatingFlow(enc->launch_base | it.index);
    if (enc->host_linked[it.index]) seq->TerminatingFlow(enc->host_base | it.index);
  }
  seq->Begin(it.begin, name, cat);
  ++enc->res->events;
}

// Track `t` (0: host, else stream t - 1): its descriptor, then its items in one sequence.
void EncodeTrack(RankEncoding* enc, size_t t, std::vector<Item>* items) {
  const RankContext& ctx = enc->ctx;
  uint64_t uuid = enc->base_uuid + 1 + t;
  int tid = ctx.pid * 1000 + static_cast<int>(t);
  if (t == 0) {
    WriteThreadTrack(*enc, uuid, tid, "host (launches, syncs)");
  } else {
    const StreamInfo& si = ctx.file->streams[t - 1];
    std::string name = "dev " + std::to_string(si.device) + " stream " + std::to_string(si.number) +
                       " (" + KindsLabel(si.kinds) + ")";
    WriteThreadTrack(*enc, uuid, tid, name);
  }
  int64_t first = (*items)[0].begin;
  for (const Item& it : *items) first = std::min(first, it.begin);
  Sequence seq(enc->out, ctx.first_seq + static_cast<uint32_t>(t), uuid, first);
  EmitTrack(items, &seq, &enc->res->truncated, [&](const Item& it) { EmitItem(enc, &seq, t, it); });
}

// One NVTX event of track `t`'s items: a slice (a range) or an instant (a mark), named by its
// message, with its domain, level and color as arguments.
void EmitNvtxItem(RankEncoding* enc, Sequence* seq, const NvtxItem& it) {
  const NvtxEntry& e = enc->meta.nvtx[it.entry];
  const std::string& message = NvtxString(enc->meta, e.name);
  const uint64_t name = seq->Name(message.empty() ? "(unnamed NVTX range)" : message);
  const uint64_t cat = seq->Category("nvtx");
  if (it.instant) {
    seq->Instant(it.begin, name, cat);
    return;
  }
  if (enc->opt.args) {
    const std::string& domain = NvtxString(enc->meta, e.domain);
    if (!domain.empty()) seq->ArgS("domain", domain);
    if (e.event == static_cast<uint8_t>(format::NvtxEvent::kRange)) seq->ArgI("level", e.depth);
    if (e.flags & format::kNvtxHasColor) seq->ArgU("color", e.color);
  }
  auto launched = enc->launched.find(it.entry);
  if (launched != enc->launched.end()) {
    for (uint32_t event : launched->second) seq->Flow(enc->host_base | event);
  }
  seq->Begin(it.begin, name, cat);
}

// The rank's NVTX tracks, after its host and stream tracks.
void EncodeNvtxTracks(RankEncoding* enc) {
  const RankContext& ctx = enc->ctx;
  std::vector<NvtxTrack> tracks = NvtxTracks(enc->meta);
  for (size_t j = 0; j < tracks.size() && j < ctx.file->nvtx_tracks; ++j) {
    const size_t t = ctx.file->streams.size() + 1 + j;
    const uint64_t uuid = enc->base_uuid + 1 + t;
    WriteThreadTrack(*enc, uuid, ctx.pid * 1000 + static_cast<int>(t), tracks[j].name);
    std::vector<Item> items;
    for (uint32_t i = 0; i < tracks[j].items.size(); ++i) {
      const NvtxItem& it = tracks[j].items[i];
      items.push_back({it.begin + ctx.offset, it.end + ctx.offset, i,
                       it.instant ? Mark::kLaunch : Mark::kSlice});
    }
    int64_t first = items.empty() ? 0 : items[0].begin;
    for (const Item& it : items) first = std::min(first, it.begin);
    Sequence seq(enc->out, ctx.first_seq + static_cast<uint32_t>(t), uuid, first);
    EmitTrack(&items, &seq, &enc->res->truncated, [&](const Item& it) {
      NvtxItem shifted = tracks[j].items[it.index];
      shifted.begin = it.begin;
      EmitNvtxItem(enc, &seq, shifted);
    });
  }
}

// The rank's steps track, after its NVTX tracks (steps_track.h): a slice "step N" per step (N
// counting from 1 in the file; "step N (guessed)" for guessed ones), on the aligned clock.
void EncodeStepsTrack(RankEncoding* enc) {
  const RankContext& ctx = enc->ctx;
  const StepsTrack& steps = ctx.file->steps;
  if (steps.steps.empty()) return;
  const size_t t = ctx.file->streams.size() + 1 + ctx.file->nvtx_tracks;
  const uint64_t uuid = enc->base_uuid + 1 + t;
  WriteThreadTrack(*enc, uuid, ctx.pid * 1000 + static_cast<int>(t),
                   steps.guessed ? "steps (guessed)" : "steps");
  Sequence seq(enc->out, ctx.first_seq + static_cast<uint32_t>(t), uuid,
               steps.steps.front().begin_ns + ctx.offset);
  const uint64_t cat = seq.Category("step");
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    if (enc->opt.args) seq.ArgS("source", steps.source);
    const std::string name =
        "step " + std::to_string(i + 1) + (steps.guessed ? " (guessed)" : "");
    seq.Begin(steps.steps[i].begin_ns + ctx.offset, seq.Name(name), cat);
    seq.End(steps.steps[i].end_ns + ctx.offset);
  }
}

// Which NVTX range launched which op, where the trace can tell (host_links.h).
void LinkHostSlices(RankEncoding* enc) {
  enc->host_base = (1ull << 61) | (static_cast<uint64_t>(enc->ctx.ordinal) << 36);
  enc->host_linked.assign(enc->events.size(), false);
  if (!enc->opt.launches) return;
  for (const HostLink& l : HostLinks(enc->events, enc->meta)) {
    enc->host_linked[l.event] = true;
    enc->launched[l.entry].push_back(l.event);
  }
}

}  // namespace

RankResult EncodeRank(const RankContext& ctx, PacketCompressor* compressor) {
  RankResult res;
  std::string packets;
  RankEncoding enc(ctx, compressor ? &packets : &res.bytes);
  enc.res = &res;
  enc.events.reserve(ctx.file->events);
  ReadResult r =
      ReadTimeline(ctx.file->path, [&](const EventRecord& e) { enc.events.push_back(e); });
  enc.meta = std::move(r.metadata);
  enc.out->reserve(enc.events.size() * 96);  // about what a slice with arguments and a launch takes
  enc.base_uuid = static_cast<uint64_t>(ctx.ordinal + 1) << 20;
  enc.launch_base = (1ull << 62) | (static_cast<uint64_t>(ctx.ordinal) << 36);
  enc.p2p_flows = P2PFlowIds(enc.events, enc.meta.comms, ctx.p2p->shifts);
  LinkHostSlices(&enc);

  WriteProcessTrack(enc);
  std::vector<std::vector<Item>> tracks = SplitTracks(enc);
  for (size_t t = 0; t < tracks.size(); ++t) {
    if (!tracks[t].empty()) EncodeTrack(&enc, t, &tracks[t]);
  }
  EncodeNvtxTracks(&enc);
  EncodeStepsTrack(&enc);
  if (compressor) compressor->Compress(packets, &res.bytes);
  if (res.truncated) {
    res.warning =
        ctx.file->path + ": " + std::to_string(res.truncated) +
        " slices started more than 1 us before the previous one on their stream ended; the "
        "previous one was cut short there";
  }
  return res;
}

}  // namespace timeline
}  // namespace xtimer

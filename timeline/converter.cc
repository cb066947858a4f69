#include "timeline/converter.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "format/record.h"
#include "timeline/clock_align.h"
#include "timeline/flows.h"
#include "timeline/inputs.h"
#include "timeline/packet_compressor.h"
#include "timeline/packet_sequence.h"
#include "timeline/proto_wire.h"
#include "timeline/slice_args.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {
namespace {

using format::OpKind;
using format::Operation;


// ---------------- inputs ----------------
struct StreamInfo {
  int16_t device;
  uint64_t stream;
  uint32_t kinds;  // bit per OpKind
  uint32_t number;  // the stream's number in its track name (StreamNumbers)
};

struct FileInfo {
  std::string path;
  std::string dir;
  bool ok = false;
  std::string error;  // rejected: why; recovered: why it stopped
  Metadata meta;      // strings and comms dropped after pass 1
  uint64_t events = 0;
  uint64_t rejected = 0;  // events left out for breaking a limit (timeline/format.h)
  std::vector<StreamInfo> streams;  // sorted by (device, stream)
  bool has_host = false;
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

// Collectives of communicators whose members all run on this node (the daemon names the global
// ranks of its own node's members only, so a complete member list means a node-local one) cannot
// align clocks: they are dropped, which keeps alignment's memory to the cross-node collectives.
void DropNodeLocal(const std::vector<CommInfo>& comms, std::vector<CollectiveEnd>* ends) {
  std::set<uint64_t> local;
  for (const CommInfo& c : comms) {
    if (c.size > 0 && c.members.size() == static_cast<size_t>(c.size) &&
        std::all_of(c.members.begin(), c.members.end(), [](int32_t g) { return g >= 0; })) {
      local.insert(c.id);
    }
  }
  if (local.empty()) return;
  ends->erase(std::remove_if(ends->begin(), ends->end(),
                             [&](const CollectiveEnd& e) { return local.count(e.first.first); }),
              ends->end());
}

// The legacy default stream: 0, or its handle cudaStreamLegacy.
bool IsDefaultStream(uint64_t stream) { return stream == 0 || stream == 1; }

// Track names carry a stream number, not the cudaStream_t (a host pointer that means nothing to
// a reader and differs per run): 0 is the default stream, the others are numbered 1, 2, ... per
// rank in order of first use (earliest launch, else GPU start; ties by device and handle).
void StreamNumbers(const std::map<std::pair<int16_t, uint64_t>, int64_t>& first_use,
                   std::vector<StreamInfo>* streams) {
  std::vector<std::pair<int64_t, size_t>> order;  // (first use, index in *streams)
  for (size_t i = 0; i < streams->size(); ++i) {
    const StreamInfo& s = (*streams)[i];
    if (IsDefaultStream(s.stream)) continue;
    order.push_back({first_use.at({s.device, s.stream}), i});
  }
  std::sort(order.begin(), order.end());  // streams are sorted by (device, handle): ties too
  for (size_t n = 0; n < order.size(); ++n) {
    (*streams)[order[n].second].number = static_cast<uint32_t>(n + 1);
  }
}

void Pass1(FileInfo* f) {
  std::map<std::pair<int16_t, uint64_t>, uint32_t> streams;
  std::map<std::pair<int16_t, uint64_t>, int64_t> first_use;
  bool has_host = false;
  std::vector<EventRecord> p2p;
  ReadResult r = ReadTimeline(f->path, [&](const EventRecord& e) {
    if (e.kind == static_cast<uint8_t>(OpKind::kP2P)) p2p.push_back(e);
    if (e.kind == static_cast<uint8_t>(OpKind::kHostSync)) {
      has_host = true;
      return;
    }
    if (e.cpu_launch_ns > 0) has_host = true;
    streams[{e.device, e.stream}] |= 1u << (e.kind & 31);
    const int64_t use = e.cpu_launch_ns > 0 ? e.cpu_launch_ns : e.gpu_start_ns;
    auto fu = first_use.emplace(std::make_pair(e.device, e.stream), use).first;
    fu->second = std::min(fu->second, use);
    // Collectives only: a send/recv's seq counts per peer, so equal keys on two ranks need not
    // be the same operation.
    if (e.kind == static_cast<uint8_t>(OpKind::kCollective) && e.comm_id != 0) {
      f->ends.push_back({{e.comm_id, e.seq}, e.gpu_start_ns + std::max<int64_t>(e.duration_ns, 0)});
    }
  });
  f->ok = r.ok;
  f->error = r.error;
  f->events = r.events;
  f->rejected = r.rejected;
  f->meta = std::move(r.metadata);
  DropNodeLocal(f->meta.comms, &f->ends);  // before the communicators are dropped below
  for (const auto& op : P2POps(p2p, f->meta.comms)) f->p2p.push_back(op.second);
  f->meta.strings.clear();
  f->meta.strings.shrink_to_fit();
  for (const CommInfo& c : f->meta.comms) {
    if (c.size <= 0) continue;
    FileInfo::CommSeen seen{c.id, c.size, {}};
    if (c.rank >= 0 && c.rank < c.size && c.global_rank >= 0) {
      seen.members.push_back({c.rank, c.global_rank});
    }
    for (size_t i = 0; i < c.members.size() && i < static_cast<size_t>(c.size); ++i) {
      if (c.members[i] >= 0) seen.members.push_back({static_cast<int32_t>(i), c.members[i]});
    }
    f->comms.push_back(std::move(seen));
  }
  f->meta.comms.clear();
  for (const auto& s : streams) f->streams.push_back({s.first.first, s.first.second, s.second, 0});
  StreamNumbers(first_use, &f->streams);
  f->has_host = has_host;
  std::sort(f->ends.begin(), f->ends.end());  // by key, then the earliest end first
  f->ends.erase(std::unique(f->ends.begin(), f->ends.end(),
                            [](const CollectiveEnd& a, const CollectiveEnd& b) {
                              return a.first == b.first;
                            }),
                f->ends.end());
  f->node = !f->meta.host.empty() ? f->meta.host : !f->meta.node.empty() ? f->meta.node : f->dir;
}

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

// Frees pass 1's lists.
P2PMatch MatchFilesP2P(const std::vector<FileInfo*>& ranks,
                       const std::vector<int64_t>& offsets) {
  P2PMatch match;
  std::map<P2PPair, std::vector<int64_t>> sends, receives;
  for (FileInfo* f : ranks) {
    for (const P2POp& op : f->p2p) {
      (op.recv ? receives : sends)[op.pair].push_back(op.end + offsets[f->node_index]);
    }
  }
  match.shifts = MatchP2P(sends, receives);
  for (FileInfo* f : ranks) {
    for (const auto& [i, id] : P2PNumbered(f->p2p, match.shifts)) {
      if (f->p2p[i].recv) continue;
      match.send_start.push_back({id, f->p2p[i].start + offsets[f->node_index]});
    }
    f->p2p.clear();
    f->p2p.shrink_to_fit();
  }
  std::sort(match.send_start.begin(), match.send_start.end());
  return match;
}

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
  uint64_t truncated = 0;  // overlaps longer than kOverlapNoiseNs
  std::string warning;
};

std::string EventName(const EventRecord& e, const Metadata& m) {
  if (e.name != 0 && e.name < m.strings.size() && !m.strings[e.name].empty()) {
    return m.strings[e.name];
  }
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

RankResult EncodeRank(const RankContext& ctx, PacketCompressor* compressor) {
  RankResult res;
  std::string packets;
  std::vector<EventRecord> events;
  events.reserve(ctx.file->events);
  ReadResult r = ReadTimeline(ctx.file->path, [&](const EventRecord& e) { events.push_back(e); });
  const Metadata& m = r.metadata;
  const ConvertOptions& opt = *ctx.options;
  std::string* out = compressor ? &packets : &res.bytes;
  out->reserve(events.size() * 96);  // about what a slice with arguments and a launch takes

  uint64_t base_uuid = static_cast<uint64_t>(ctx.ordinal + 1) << 20;
  int rank = ctx.file->meta.rank;
  // Process track.
  {
    std::string td, pd;
    wire::U64(&pd, kPdPid, ctx.pid);
    wire::U64(&pd, kPdSortIndex, ctx.sort_index);
    std::string name = (rank >= 0 ? "rank " + std::to_string(rank)
                                  : "unknown rank pid " + std::to_string(ctx.file->meta.pid)) +
                       " (" + ctx.file->node + ")";
    wire::Bytes(&pd, kPdName, name);
    if (!ctx.label.empty()) wire::Bytes(&pd, kPdLabels, ctx.label);
    if (!m.job.empty()) wire::Bytes(&pd, kPdLabels, "job " + m.job);
    wire::U64(&td, kTdUuid, base_uuid);
    wire::Bytes(&td, kTdProcess, pd);
    std::string p;
    wire::Bytes(&p, kPktTrackDescriptor, td);
    wire::Bytes(out, kTracePacket, p);
  }
  auto thread_track = [&](uint64_t uuid, int tid, const std::string& name) {
    std::string td, th, p;
    wire::U64(&th, kThPid, ctx.pid);
    wire::U64(&th, kThTid, tid);
    wire::Bytes(&th, kThName, name);
    wire::U64(&td, kTdUuid, uuid);
    wire::U64(&td, kTdParent, base_uuid);
    wire::Bytes(&td, kTdThread, th);
    wire::Bytes(&p, kPktTrackDescriptor, td);
    wire::Bytes(out, kTracePacket, p);
  };

  // Split events into tracks: index 0 = host track, 1.. = streams (pass-1 order).
  const std::vector<StreamInfo>& streams = ctx.file->streams;
  size_t ntracks = streams.size() + 1;
  std::vector<std::vector<Item>> tracks(ntracks);
  const int64_t off = ctx.offset;
  // A send's slice starts the flow to its receive; the flow ends on an instant at the receive's
  // end (when the data has arrived), on the receiver's stream. Perfetto draws a flow from the
  // slice that begins first, so ending it on the receive's own slice would draw a receive posted
  // before its send as receive -> send.
  const std::unordered_map<uint32_t, uint64_t> p2p_flows =
      P2PFlowIds(events, m.comms, ctx.p2p->shifts);
  for (uint32_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
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
    auto p2p = opt.flows ? p2p_flows.find(i) : p2p_flows.end();
    tracks[t].push_back({b, en, i, Mark::kSlice});
    if (p2p != p2p_flows.end() && e.op == static_cast<uint16_t>(Operation::kRecv)) {
      const int64_t arrival = ctx.p2p->Arrival(p2p->second, en);
      if (arrival >= 0) tracks[t].push_back({arrival, arrival, i, Mark::kArrival});
    }
    if (opt.launches && e.cpu_launch_ns > 0) {
      // A launch cannot follow its GPU start; where the two clocks say so (by the GPU-to-host
      // alignment error, about a microsecond) the instant is put at the start, so that the
      // launch flow runs forward in time (Perfetto drops flows that run backwards).
      int64_t c = std::min(e.cpu_launch_ns, e.gpu_start_ns) + off;
      tracks[0].push_back({c, c, i, Mark::kLaunch});
    }
  }
  const uint64_t launch_base = (1ull << 62) | (static_cast<uint64_t>(ctx.ordinal) << 36);
  for (size_t t = 0; t < ntracks; ++t) {
    if (tracks[t].empty()) continue;
    uint64_t uuid = base_uuid + 1 + t;
    int tid = ctx.pid * 1000 + static_cast<int>(t);
    if (t == 0) {
      thread_track(uuid, tid, "host (launches, syncs)");
    } else {
      const StreamInfo& si = streams[t - 1];
      std::string name = "dev " + std::to_string(si.device) + " stream " +
                         std::to_string(si.number) + " (" + KindsLabel(si.kinds) + ")";
      thread_track(uuid, tid, name);
    }
    int64_t first = tracks[t][0].begin;
    for (const Item& it : tracks[t]) first = std::min(first, it.begin);
    Sequence seq(out, ctx.first_seq + static_cast<uint32_t>(t), uuid, first);
    EmitTrack(&tracks[t], &seq, &res.truncated, [&](const Item& it) {
      const EventRecord& e = events[it.index];
      const bool arrival = it.mark == Mark::kArrival;
      uint64_t name = seq.CachedName(
          (static_cast<uint64_t>(arrival) << 63) | (static_cast<uint64_t>(e.name) << 16) | e.op,
          [&] { return EventName(e, m) + (arrival ? " done" : ""); });
      uint64_t cat = seq.CachedCategory(e.kind);
      if (it.mark == Mark::kLaunch) {
        seq.Flow(launch_base | it.index);
        seq.Instant(it.begin, name, cat);
        return;
      }
      if (arrival) {
        seq.TerminatingFlow(p2p_flows.at(it.index));
        seq.Instant(it.begin, name, cat);
        return;
      }
      if (opt.args) AddArgs(&seq, e, *ctx.comms);
      if (opt.flows && e.kind == static_cast<uint8_t>(OpKind::kCollective) && e.comm_id != 0) {
        seq.Flow(CollectiveFlowId(e.comm_id, e.seq));
      }
      if (e.op == static_cast<uint16_t>(Operation::kSend)) {
        auto p2p = p2p_flows.find(it.index);
        if (opt.flows && p2p != p2p_flows.end()) seq.Flow(p2p->second);
      }
      if (opt.launches && t != 0 && e.cpu_launch_ns > 0)
        seq.TerminatingFlow(launch_base | it.index);
      seq.Begin(it.begin, name, cat);
      ++res.events;
    });
  }
  if (compressor) compressor->Compress(packets, &res.bytes);
  if (res.truncated) {
    res.warning =
        ctx.file->path + ": " + std::to_string(res.truncated) +
        " slices started more than 1 us before the previous one on their stream ended; the "
        "previous one was cut short there";
  }
  return res;
}

// Ranks of the world that no file holds, and files from different dumps (job, dump_time).
void WarnAboutInputs(const std::vector<FileInfo*>& ranks, std::vector<std::string>* warnings,
                     int* missing_ranks) {
  int world = 0;
  std::set<int> found;
  std::map<std::pair<std::string, int64_t>, int> dumps;  // (job, dump_time_ns) -> files
  for (const FileInfo* f : ranks) {
    world = std::max(world, f->meta.world_size);
    if (f->meta.rank >= 0) found.insert(f->meta.rank);
    ++dumps[{f->meta.job, f->meta.dump_time_ns}];
  }
  if (world > 0 && static_cast<int>(found.size()) < world) {
    std::string missing;
    int listed = 0;
    for (int r = 0; r < world && listed < 16; ++r) {
      if (found.count(r)) continue;
      missing += (listed++ ? " " : "") + std::to_string(r);
    }
    const int n = world - static_cast<int>(found.size());
    *missing_ranks = n;
    if (n > listed) missing += " … " + std::to_string(n - listed) + " more";
    warnings->push_back(std::to_string(n) + " of " + std::to_string(world) +
                        " ranks have no file (ranks " + missing +
                        "): the trace shows part of the job; give every node's directory");
  }
  if (dumps.size() > 1) {
    std::string list;
    for (const auto& d : dumps) {
      list += (list.empty() ? "" : "; ") + std::string("job '") + d.first.first +
              "' dump_time " + std::to_string(d.first.second) + " ns: " +
              std::to_string(d.second) + (d.second == 1 ? " file" : " files");
    }
    warnings->push_back("the inputs come from " + std::to_string(dumps.size()) +
                        " different dumps (" + list +
                        "); their times do not line up: convert one dump at a time");
  }
}

std::string HumanCount(uint64_t n) {
  char b[32];
  if (n >= 1000000)
    std::snprintf(b, sizeof(b), "%.1fM", n / 1e6);
  else if (n >= 1000)
    std::snprintf(b, sizeof(b), "%.1fk", n / 1e3);
  else
    std::snprintf(b, sizeof(b), "%llu", static_cast<unsigned long long>(n));
  return b;
}

}  // namespace

bool ConvertTimelines(const ConvertOptions& opt, ConvertStats* stats, std::string* error,
                      FILE* log) {
  auto t0 = std::chrono::steady_clock::now();
  FILE* info = opt.quiet ? nullptr : log;
  int jobs =
      opt.jobs > 0 ? opt.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  GroupLayout layout;
  if (!opt.groups.empty() && !ParseGroupLayout(opt.groups, &layout, error)) return false;
  if (opt.compression_level < 0 || opt.compression_level > PacketCompressor::kMaxLevel) {
    *error = "compression level " + std::to_string(opt.compression_level) + " is not in 0.." +
             std::to_string(PacketCompressor::kMaxLevel);
    return false;
  }

  std::vector<FileInfo> files;
  {
    InputList inputs = ListTimelineInputs(opt.inputs);
    for (InputFile& in : inputs.files) {
      FileInfo f;
      f.path = std::move(in.path);
      f.dir = std::move(in.dir);
      files.push_back(std::move(f));
    }
    stats->skipped = std::move(inputs.skipped);
    stats->notes = std::move(inputs.notes);
  }
  stats->files = static_cast<int>(files.size());

  // Pass 1: metadata, streams, collective end times.
  auto parallel = [&](size_t count, const std::function<void(size_t)>& fn) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    int nt = static_cast<int>(std::min<size_t>(jobs, std::max<size_t>(count, 1)));
    for (int t = 0; t < nt; ++t) {
      threads.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < count;) fn(i);
      });
    }
    for (auto& t : threads) t.join();
  };
  std::mutex mu;
  std::atomic<size_t> pass1_done{0};
  std::map<std::string, std::vector<CollectiveEnd>> node_ends;  // sorted, one per collective
  parallel(files.size(), [&](size_t i) {
    FileInfo& f = files[i];
    Pass1(&f);
    if (f.ok && opt.align_clocks) {
      std::lock_guard<std::mutex> lock(mu);
      MergeEnds(&node_ends[f.node], f.ends);
    }
    f.ends.clear();
    f.ends.shrink_to_fit();
    size_t done = ++pass1_done;
    if (opt.progress && log) {
      std::lock_guard<std::mutex> lock(mu);
      std::fprintf(log, "\rreading %zu/%zu files", done, files.size());
      std::fflush(log);
    }
  });
  if (opt.progress && log) std::fprintf(log, "\n");

  // Select the ranks: good files, one per rank.
  std::vector<FileInfo*> ranks;
  for (FileInfo& f : files) {
    if (!f.ok) {
      stats->skipped.push_back(f.path + ": " + f.error);
      continue;
    }
    if (!f.error.empty()) stats->warnings.push_back(f.path + ": " + f.error);
    stats->rejected_events += f.rejected;
    ranks.push_back(&f);
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](const FileInfo* a, const FileInfo* b) {
    if (a->meta.rank != b->meta.rank) return a->meta.rank < b->meta.rank;
    return a->path < b->path;
  });
  {
    std::vector<FileInfo*> unique;
    for (FileInfo* f : ranks) {
      if (f->meta.rank >= 0 && !unique.empty() && unique.back()->meta.rank == f->meta.rank) {
        stats->skipped.push_back(f->path + ": duplicate rank " + std::to_string(f->meta.rank) +
                                 " (already read from " + unique.back()->path + ")");
        continue;
      }
      unique.push_back(f);
    }
    ranks.swap(unique);
  }
  WarnAboutInputs(ranks, &stats->warnings, &stats->missing_ranks);
  CommTable comms;
  for (FileInfo* f : ranks) {
    for (const FileInfo::CommSeen& seen : f->comms) {
      CommMembers& c = comms[seen.id];
      if (c.size == 0) c.size = seen.size;
      if (c.size != seen.size) {
        stats->warnings.push_back(f->path + ": communicator " + CommHex(seen.id) + " has " +
                                  std::to_string(seen.size) + " ranks here, " +
                                  std::to_string(c.size) + " in an earlier file");
        continue;
      }
      for (const auto& m : seen.members) c.global[m.first] = m.second;  // ranks < size (pass 1)
    }
    f->comms.clear();
    f->comms.shrink_to_fit();
  }
  if (!layout.dims.empty()) {
    int world = 0;
    for (FileInfo* f : ranks) world = std::max(world, f->meta.world_size);
    if (world > 0 && layout.world() != world) {
      *error = "--groups " + opt.groups + " describes " + std::to_string(layout.world()) +
               " ranks, the files say world size " + std::to_string(world);
      return false;
    }
    std::stable_sort(ranks.begin(), ranks.end(), [&](const FileInfo* a, const FileInfo* b) {
      bool ua = a->meta.rank < 0, ub = b->meta.rank < 0;
      if (ua != ub) return ub;
      if (ua) return false;
      return layout.OrderKey(a->meta.rank) < layout.OrderKey(b->meta.rank);
    });
  } else {
    // Unknown ranks last.
    std::stable_partition(ranks.begin(), ranks.end(),
                          [](const FileInfo* f) { return f->meta.rank >= 0; });
  }
  for (const std::string& s : stats->notes) {
    if (info) std::fprintf(info, "note: %s\n", s.c_str());
  }
  for (const std::string& s : stats->skipped) {
    if (info) std::fprintf(info, "skipped %s\n", s.c_str());
  }
  for (const std::string& s : stats->warnings) {
    if (info) std::fprintf(info, "warning: %s\n", s.c_str());
  }
  if (ranks.empty()) {
    *error = "no readable timeline files";
    return false;
  }

  // Clock alignment per node.
  std::vector<NodeEnds> nodes;
  std::map<std::string, int> node_index;
  for (FileInfo* f : ranks) node_index.emplace(f->node, 0);
  for (auto& kv : node_index) {
    kv.second = static_cast<int>(nodes.size());
    NodeEnds ne;
    ne.node = kv.first;
    auto it = node_ends.find(kv.first);
    if (it != node_ends.end()) ne.ends.swap(it->second);
    nodes.push_back(std::move(ne));
  }
  node_ends.clear();
  for (const NodeEnds& ne : nodes) stats->align_entries += ne.ends.size();
  ClockAlignment alignment = AlignClocks(nodes);
  const std::vector<int64_t>& offsets = alignment.offset;
  const std::vector<int>& reference_of = alignment.reference_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    stats->offsets.push_back({nodes[i].node, offsets[i]});
    if (!info) continue;
    if (!opt.align_clocks) {
      std::fprintf(info, "clock offset %s: 0 ns (alignment off)\n", nodes[i].node.c_str());
    } else if (reference_of[i] == static_cast<int>(i)) {
      std::fprintf(info, "clock offset %s: 0 ns (reference)\n", nodes[i].node.c_str());
    } else if (reference_of[i] < 0) {
      std::fprintf(
          info, "clock offset %s: 0 ns (shares no collective with the other nodes: not aligned)\n",
          nodes[i].node.c_str());
    } else {
      std::fprintf(info,
                   "clock offset %s: %+lld ns (relative to %s, from %zu shared collectives)\n",
                   nodes[i].node.c_str(), static_cast<long long>(offsets[i]),
                   nodes[reference_of[i]].node.c_str(), alignment.shared[i]);
    }
  }
  for (NodeEnds& ne : nodes) {
    ne.ends.clear();
    ne.ends.shrink_to_fit();
  }
  for (FileInfo* f : ranks) f->node_index = node_index[f->node];
  const P2PMatch p2p = MatchFilesP2P(ranks, offsets);

  // Pass 2: encode ranks in parallel, write in order.
  std::string tmp = opt.output + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  bool write_ok = true;
  auto write = [&](const std::string& s) {
    if (write_ok && std::fwrite(s.data(), 1, s.size(), out) != s.size()) write_ok = false;
    stats->trace_bytes += s.size();
  };
  {
    // Trace clock: CLOCK_REALTIME (the files' clock).
    std::string p, cs, clk;
    int64_t t = 0;
    for (FileInfo* f : ranks) {
      if (f->meta.clock_realtime_ns > 0) {
        t = f->meta.clock_realtime_ns;
        break;
      }
    }
    wire::U64(&clk, kClkId, kClockRealtime);
    wire::U64(&clk, kClkTimestamp, static_cast<uint64_t>(t));
    wire::Bytes(&cs, kCsClocks, clk);
    clk.clear();
    wire::U64(&clk, kClkId, kClockBoottime);
    wire::U64(&clk, kClkTimestamp, static_cast<uint64_t>(t));
    wire::Bytes(&cs, kCsClocks, clk);
    wire::U64(&cs, kCsPrimary, kClockRealtime);
    wire::Bytes(&p, kPktClockSnapshot, cs);
    std::string pkt;
    wire::Bytes(&pkt, kTracePacket, p);
    write(pkt);
  }
  std::vector<RankContext> ctxs(ranks.size());
  uint32_t seq = 1;
  uint64_t total_events = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankContext& c = ctxs[i];
    c.file = ranks[i];
    c.ordinal = static_cast<int>(i);
    c.first_seq = seq;
    seq += static_cast<uint32_t>(ranks[i]->streams.size() + 1);
    c.pid = ranks[i]->meta.rank >= 0 ? ranks[i]->meta.rank + 1 : 1000000 + static_cast<int>(i);
    c.offset = offsets[ranks[i]->node_index];
    c.label =
        layout.dims.empty() || ranks[i]->meta.rank < 0 ? "" : layout.Label(ranks[i]->meta.rank);
    c.sort_index = static_cast<int>(i);
    c.options = &opt;
    c.comms = &comms;
    c.p2p = &p2p;
    total_events += ranks[i]->events;
  }
  std::vector<RankResult> results(ranks.size());
  std::vector<bool> ready(ranks.size(), false);
  std::mutex rmu;
  std::condition_variable cv;
  size_t written = 0;
  const size_t window = static_cast<size_t>(jobs) * 2;
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < std::min<int>(jobs, static_cast<int>(ranks.size())); ++t) {
    workers.emplace_back([&] {
      std::unique_ptr<PacketCompressor> compressor;
      if (opt.compression_level > 0)
        compressor = std::make_unique<PacketCompressor>(opt.compression_level);
      for (;;) {
        size_t i = next.fetch_add(1);
        if (i >= ranks.size()) return;
        {
          std::unique_lock<std::mutex> lock(rmu);
          cv.wait(lock, [&] { return i < written + window; });  // bound memory
        }
        RankResult r = EncodeRank(ctxs[i], compressor.get());
        std::lock_guard<std::mutex> lock(rmu);
        results[i] = std::move(r);
        ready[i] = true;
        cv.notify_all();
      }
    });
  }
  uint64_t done_events = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankResult r;
    {
      std::unique_lock<std::mutex> lock(rmu);
      cv.wait(lock, [&] { return ready[i]; });
      r = std::move(results[i]);
      written = i + 1;
      cv.notify_all();
    }
    write(r.bytes);
    stats->events += r.events;
    done_events += ranks[i]->events;
    if (!r.warning.empty()) {
      stats->warnings.push_back(r.warning);
      if (info) std::fprintf(info, "warning: %s\n", r.warning.c_str());
    }
    if (opt.progress && log) {
      std::fprintf(log, "\rconverting %zu/%zu ranks, %s/%s events", i + 1, ranks.size(),
                   HumanCount(done_events).c_str(), HumanCount(total_events).c_str());
      std::fflush(log);
    }
  }
  for (auto& w : workers) w.join();
  if (opt.progress && log) std::fprintf(log, "\n");
  if (std::fclose(out) != 0) write_ok = false;
  if (!write_ok) {
    unlink(tmp.c_str());
    *error = "write " + tmp + " failed: " + std::strerror(errno);
    return false;
  }
  if (std::rename(tmp.c_str(), opt.output.c_str()) != 0) {
    *error = "rename " + tmp + " to " + opt.output + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  stats->ranks = static_cast<int>(ranks.size());
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (info) {
    std::fprintf(info, "wrote %s: %d ranks, %llu slices, %llu bytes (%.1f bytes/slice) in %.2f s\n",
                 opt.output.c_str(), stats->ranks, static_cast<unsigned long long>(stats->events),
                 static_cast<unsigned long long>(stats->trace_bytes),
                 stats->events ? static_cast<double>(stats->trace_bytes) / stats->events : 0.0,
                 stats->seconds);
  }
  return true;
}

}  // namespace timeline
}  // namespace xtimer

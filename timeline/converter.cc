#include "timeline/converter.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "format/record.h"
#include "timeline/clock_align.h"
#include "timeline/flows.h"
#include "timeline/inputs.h"
#include "timeline/nvtx_tracks.h"
#include "timeline/packet_compressor.h"
#include "timeline/packet_sequence.h"
#include "timeline/proto_wire.h"
#include "timeline/rank_encoder.h"
#include "timeline/slice_args.h"
#include "timeline/timeline_io.h"
#include "util/parallel_for.h"

namespace xtimer {
namespace timeline {
namespace {

using format::OpKind;

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
  StepsTrackBuilder steps;
  ReadResult r = ReadTimeline(f->path, [&](const EventRecord& e) {
    if (e.kind == static_cast<uint8_t>(OpKind::kP2P)) p2p.push_back(e);
    steps.Add(e);
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
  f->nvtx_tracks = static_cast<uint32_t>(NvtxTracks(f->meta).size());
  f->steps = steps.Finish(f->meta);
  f->meta.nvtx.clear();
  f->meta.nvtx.shrink_to_fit();
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

// One conversion's state, from phase to phase.
struct Conversion {
  Conversion(const ConvertOptions& o, ConvertStats* s, FILE* l)
      : opt(o), stats(s), log(l), info(o.quiet ? nullptr : l) {}
  const ConvertOptions& opt;
  ConvertStats* stats;
  FILE* log;   // progress
  FILE* info;  // notes, warnings, offsets, the summary; null when quiet
  int jobs = 1;
  GroupLayout layout;
  std::vector<FileInfo> files;
  std::map<std::string, std::vector<CollectiveEnd>> node_ends;  // sorted, one per collective
  std::vector<FileInfo*> ranks;  // the files converted, in output order
  CommTable comms;
  std::vector<int64_t> offsets;  // ns added to each node's times, by FileInfo::node_index
  P2PMatch p2p;
};

bool CheckOptions(Conversion* c, std::string* error) {
  const ConvertOptions& opt = c->opt;
  c->jobs =
      opt.jobs > 0 ? opt.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!opt.groups.empty() && !ParseGroupLayout(opt.groups, &c->layout, error)) return false;
  if (opt.compression_level < 0 || opt.compression_level > PacketCompressor::kMaxLevel) {
    *error = "compression level " + std::to_string(opt.compression_level) + " is not in 0.." +
             std::to_string(PacketCompressor::kMaxLevel);
    return false;
  }
  return true;
}

void ListFiles(Conversion* c) {
  InputList inputs = ListTimelineInputs(c->opt.inputs);
  for (InputFile& in : inputs.files) {
    FileInfo f;
    f.path = std::move(in.path);
    f.dir = std::move(in.dir);
    c->files.push_back(std::move(f));
  }
  c->stats->skipped = std::move(inputs.skipped);
  c->stats->notes = std::move(inputs.notes);
  c->stats->files = static_cast<int>(c->files.size());
}

// Pass 1: metadata, streams, collective end times (merged per node for the clock alignment).
void ReadPass1(Conversion* c) {
  const ConvertOptions& opt = c->opt;
  std::mutex mu;
  std::atomic<size_t> pass1_done{0};
  ParallelFor(c->files.size(), c->jobs, [&](size_t i) {
    FileInfo& f = c->files[i];
    Pass1(&f);
    if (f.ok && opt.align_clocks) {
      std::lock_guard<std::mutex> lock(mu);
      MergeEnds(&c->node_ends[f.node], f.ends);
    }
    f.ends.clear();
    f.ends.shrink_to_fit();
    size_t done = ++pass1_done;
    if (opt.progress && c->log) {
      std::lock_guard<std::mutex> lock(mu);
      std::fprintf(c->log, "\rreading %zu/%zu files", done, c->files.size());
      std::fflush(c->log);
    }
  });
  if (opt.progress && c->log) std::fprintf(c->log, "\n");
}

// The ranks: good files, one per rank, by rank.
void SelectRanks(Conversion* c) {
  ConvertStats* stats = c->stats;
  std::vector<FileInfo*> ranks;
  for (FileInfo& f : c->files) {
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
  for (FileInfo* f : ranks) {
    if (f->meta.rank >= 0 && !c->ranks.empty() && c->ranks.back()->meta.rank == f->meta.rank) {
      stats->skipped.push_back(f->path + ": duplicate rank " + std::to_string(f->meta.rank) +
                               " (already read from " + c->ranks.back()->path + ")");
      continue;
    }
    c->ranks.push_back(f);
  }
}

// The communicators' members as the files together know them; frees pass 1's lists.
void MergeComms(Conversion* c) {
  for (FileInfo* f : c->ranks) {
    for (const FileInfo::CommSeen& seen : f->comms) {
      CommMembers& m = c->comms[seen.id];
      if (m.size == 0) m.size = seen.size;
      if (m.size != seen.size) {
        c->stats->warnings.push_back(f->path + ": communicator " + CommHex(seen.id) + " has " +
                                     std::to_string(seen.size) + " ranks here, " +
                                     std::to_string(m.size) + " in an earlier file");
        continue;
      }
      for (const auto& g : seen.members) m.global[g.first] = g.second;  // ranks < size (pass 1)
    }
    f->comms.clear();
    f->comms.shrink_to_fit();
  }
}

// The output order: by rank (with --groups, Megatron's rank order is also the order of the
// groups: pp, dp, ep, cp, tp), unknown ranks last.
bool OrderRanks(Conversion* c, std::string* error) {
  std::vector<FileInfo*>& ranks = c->ranks;
  const GroupLayout& layout = c->layout;
  if (!layout.given) {
    std::stable_partition(ranks.begin(), ranks.end(),
                          [](const FileInfo* f) { return f->meta.rank >= 0; });
    return true;
  }
  int world = 0;
  for (FileInfo* f : ranks) world = std::max(world, f->meta.world_size);
  if (world > 0 && layout.world() != world) {
    *error = "--groups " + c->opt.groups + " describes " + std::to_string(layout.world()) +
             " ranks, the files say world size " + std::to_string(world);
    return false;
  }
  std::stable_sort(ranks.begin(), ranks.end(), [&](const FileInfo* a, const FileInfo* b) {
    bool ua = a->meta.rank < 0, ub = b->meta.rank < 0;
    if (ua != ub) return ub;
    if (ua) return false;
    return a->meta.rank < b->meta.rank;
  });
  return true;
}

void PrintInputs(const Conversion& c) {
  if (!c.info) return;
  for (const std::string& s : c.stats->notes) std::fprintf(c.info, "note: %s\n", s.c_str());
  for (const std::string& s : c.stats->skipped) std::fprintf(c.info, "skipped %s\n", s.c_str());
  for (const std::string& s : c.stats->warnings) std::fprintf(c.info, "warning: %s\n", s.c_str());
}

void PrintOffsets(const Conversion& c, const std::vector<NodeEnds>& nodes,
                  const ClockAlignment& alignment) {
  const std::vector<int>& reference_of = alignment.reference_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const char* node = nodes[i].node.c_str();
    if (!c.opt.align_clocks) {
      std::fprintf(c.info, "clock offset %s: 0 ns (alignment off)\n", node);
    } else if (reference_of[i] == static_cast<int>(i)) {
      std::fprintf(c.info, "clock offset %s: 0 ns (reference)\n", node);
    } else if (reference_of[i] < 0) {
      std::fprintf(
          c.info,
          "clock offset %s: 0 ns (shares no collective with the other nodes: not aligned)\n", node);
    } else {
      std::fprintf(c.info,
                   "clock offset %s: %+lld ns (relative to %s, from %zu shared collectives)\n",
                   node, static_cast<long long>(alignment.offset[i]),
                   nodes[reference_of[i]].node.c_str(), alignment.shared[i]);
    }
  }
}

// Clock alignment per node, then the sends' and receives' match on the aligned clock.
void AlignNodes(Conversion* c) {
  std::vector<NodeEnds> nodes;
  std::map<std::string, int> node_index;
  for (FileInfo* f : c->ranks) node_index.emplace(f->node, 0);
  for (auto& kv : node_index) {
    kv.second = static_cast<int>(nodes.size());
    NodeEnds ne;
    ne.node = kv.first;
    auto it = c->node_ends.find(kv.first);
    if (it != c->node_ends.end()) ne.ends.swap(it->second);
    nodes.push_back(std::move(ne));
  }
  c->node_ends.clear();
  for (const NodeEnds& ne : nodes) c->stats->align_entries += ne.ends.size();
  ClockAlignment alignment = AlignClocks(nodes);
  c->offsets = alignment.offset;
  for (size_t i = 0; i < nodes.size(); ++i) {
    c->stats->offsets.push_back({nodes[i].node, c->offsets[i]});
  }
  if (c->info) PrintOffsets(*c, nodes, alignment);
  for (NodeEnds& ne : nodes) {
    ne.ends.clear();
    ne.ends.shrink_to_fit();
  }
  for (FileInfo* f : c->ranks) f->node_index = node_index[f->node];
  c->p2p = MatchFilesP2P(c->ranks, c->offsets);
}

// The trace's first packet: its clock, CLOCK_REALTIME (the files' clock).
std::string ClockSnapshotPacket(const std::vector<FileInfo*>& ranks) {
  std::string p, cs;
  int64_t t = 0;
  for (FileInfo* f : ranks) {
    if (f->meta.clock_realtime_ns > 0) {
      t = f->meta.clock_realtime_ns;
      break;
    }
  }
  AddClock(&cs, kClockRealtime, t);
  AddClock(&cs, kClockBoottime, t);
  wire::U64(&cs, kCsPrimary, kClockRealtime);
  wire::Bytes(&p, kPktClockSnapshot, cs);
  std::string pkt;
  wire::Bytes(&pkt, kTracePacket, p);
  return pkt;
}

std::vector<RankContext> RankContexts(const Conversion& c) {
  const std::vector<FileInfo*>& ranks = c.ranks;
  std::vector<RankContext> ctxs(ranks.size());
  uint32_t seq = 1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankContext& x = ctxs[i];
    x.file = ranks[i];
    x.ordinal = static_cast<int>(i);
    x.first_seq = seq;
    seq += static_cast<uint32_t>(ranks[i]->streams.size() + 1 + ranks[i]->nvtx_tracks +
                                 !ranks[i]->steps.steps.empty());
    x.pid = ranks[i]->meta.rank >= 0 ? ranks[i]->meta.rank + 1 : 1000000 + static_cast<int>(i);
    x.offset = c.offsets[ranks[i]->node_index];
    x.label =
        !c.layout.given || ranks[i]->meta.rank < 0 ? "" : c.layout.Label(ranks[i]->meta.rank);
    x.sort_index = static_cast<int>(i);
    x.options = &c.opt;
    x.comms = &c.comms;
    x.p2p = &c.p2p;
  }
  return ctxs;
}

// Ranks encoded on worker threads, handed to the writer in order; a worker waits while it is
// `window` ranks ahead of the writer, which bounds memory.
class OrderedResults {
 public:
  OrderedResults(size_t count, size_t window)
      : results_(count), ready_(count, false), window_(window) {}

  void WaitForSlot(size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return i < written_ + window_; });
  }
  void Put(size_t i, RankResult r) {
    std::lock_guard<std::mutex> lock(mu_);
    results_[i] = std::move(r);
    ready_[i] = true;
    cv_.notify_all();
  }
  RankResult Take(size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_[i]; });
    RankResult r = std::move(results_[i]);
    written_ = i + 1;
    cv_.notify_all();
    return r;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RankResult> results_;
  std::vector<bool> ready_;
  size_t written_ = 0;
  const size_t window_;
};

// The trace file, written as a temporary renamed into place once complete.
struct TraceOutput {
  std::string tmp;
  FILE* file = nullptr;
  bool ok = true;
  uint64_t* bytes = nullptr;  // counts what was written

  void Write(const std::string& s) {
    if (ok && std::fwrite(s.data(), 1, s.size(), file) != s.size()) ok = false;
    *bytes += s.size();
  }
};

// Pass 2: encodes the ranks in parallel and writes them in order.
void EncodeRanks(const Conversion& c, TraceOutput* out) {
  const ConvertOptions& opt = c.opt;
  const std::vector<RankContext> ctxs = RankContexts(c);
  uint64_t total_events = 0, done_events = 0;
  for (const FileInfo* f : c.ranks) total_events += f->events;
  OrderedResults results(ctxs.size(), static_cast<size_t>(c.jobs) * 2);
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < std::min<int>(c.jobs, static_cast<int>(ctxs.size())); ++t) {
    workers.emplace_back([&] {
      std::unique_ptr<PacketCompressor> compressor;
      if (opt.compression_level > 0)
        compressor = std::make_unique<PacketCompressor>(opt.compression_level);
      for (size_t i; (i = next.fetch_add(1)) < ctxs.size();) {
        results.WaitForSlot(i);
        results.Put(i, EncodeRank(ctxs[i], compressor.get()));
      }
    });
  }
  for (size_t i = 0; i < ctxs.size(); ++i) {
    RankResult r = results.Take(i);
    out->Write(r.bytes);
    c.stats->events += r.events;
    done_events += ctxs[i].file->events;
    if (!r.warning.empty()) {
      c.stats->warnings.push_back(r.warning);
      if (c.info) std::fprintf(c.info, "warning: %s\n", r.warning.c_str());
    }
    if (opt.progress && c.log) {
      std::fprintf(c.log, "\rconverting %zu/%zu ranks, %s/%s events", i + 1, ctxs.size(),
                   HumanCount(done_events).c_str(), HumanCount(total_events).c_str());
      std::fflush(c.log);
    }
  }
  for (auto& w : workers) w.join();
  if (opt.progress && c.log) std::fprintf(c.log, "\n");
}

bool WriteTrace(const Conversion& c, std::string* error) {
  TraceOutput out;
  out.tmp = c.opt.output + ".tmp";
  out.bytes = &c.stats->trace_bytes;
  out.file = std::fopen(out.tmp.c_str(), "wb");
  if (out.file == nullptr) {
    *error = "cannot create " + out.tmp + ": " + std::strerror(errno);
    return false;
  }
  out.Write(ClockSnapshotPacket(c.ranks));
  EncodeRanks(c, &out);
  if (std::fclose(out.file) != 0) out.ok = false;
  if (!out.ok) {
    unlink(out.tmp.c_str());
    *error = "write " + out.tmp + " failed: " + std::strerror(errno);
    return false;
  }
  if (std::rename(out.tmp.c_str(), c.opt.output.c_str()) != 0) {
    *error = "rename " + out.tmp + " to " + c.opt.output + ": " + std::strerror(errno);
    unlink(out.tmp.c_str());
    return false;
  }
  return true;
}

void PrintSummary(const Conversion& c) {
  const ConvertStats& s = *c.stats;
  std::fprintf(c.info, "wrote %s: %d ranks, %llu slices, %llu bytes (%.1f bytes/slice) in %.2f s\n",
               c.opt.output.c_str(), s.ranks, static_cast<unsigned long long>(s.events),
               static_cast<unsigned long long>(s.trace_bytes),
               s.events ? static_cast<double>(s.trace_bytes) / s.events : 0.0, s.seconds);
}

}  // namespace

bool ConvertTimelines(const ConvertOptions& opt, ConvertStats* stats, std::string* error,
                      FILE* log) {
  auto t0 = std::chrono::steady_clock::now();
  Conversion c(opt, stats, log);
  if (!CheckOptions(&c, error)) return false;
  ListFiles(&c);
  ReadPass1(&c);
  SelectRanks(&c);
  WarnAboutInputs(c.ranks, &stats->warnings, &stats->missing_ranks);
  MergeComms(&c);
  if (!OrderRanks(&c, error)) return false;
  PrintInputs(c);
  if (c.ranks.empty()) {
    *error = "no readable timeline files";
    return false;
  }
  AlignNodes(&c);
  if (!WriteTrace(c, error)) return false;
  stats->ranks = static_cast<int>(c.ranks.size());
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (c.info) PrintSummary(c);
  return true;
}

}  // namespace timeline
}  // namespace xtimer

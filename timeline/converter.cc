#include "timeline/converter.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "format/record.h"
#include "timeline/packet_compressor.h"
#include "timeline/proto_wire.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {
namespace {

using format::OpKind;

// Perfetto field numbers (protos/perfetto/trace/...; see timeline/perfetto_trace.proto).
enum : uint32_t {
  kTracePacket = 1,
  // TracePacket
  kPktTimestamp = 8,
  kPktTimestampClockId = 58,
  kPktSeqId = 10,
  kPktTrackEvent = 11,
  kPktInterned = 12,
  kPktSeqFlags = 13,
  kPktDefaults = 59,
  kPktTrackDescriptor = 60,
  kPktClockSnapshot = 6,
  // ClockSnapshot / Clock
  kCsClocks = 1,
  kCsPrimary = 2,
  kClkId = 1,
  kClkTimestamp = 2,
  kClkIncremental = 3,
  // TracePacketDefaults / TrackEventDefaults
  kDefClockId = 58,
  kDefTrackEvent = 11,
  kTedTrackUuid = 11,
  // TrackDescriptor
  kTdUuid = 1,
  kTdName = 2,
  kTdProcess = 3,
  kTdThread = 4,
  kTdParent = 5,
  // ProcessDescriptor / ThreadDescriptor
  kPdPid = 1,
  kPdSortIndex = 3,
  kPdName = 6,
  kPdLabels = 8,
  kThPid = 1,
  kThTid = 2,
  kThName = 5,
  // TrackEvent
  kTeCategoryIids = 3,
  kTeDebug = 4,
  kTeType = 9,
  kTeNameIid = 10,
  kTeFlowIds = 47,
  kTeTerminatingFlowIds = 48,
  // DebugAnnotation
  kDaNameIid = 1,
  kDaUint = 3,
  kDaInt = 4,
  kDaDouble = 5,
  kDaStringIid = 17,
  // InternedData
  kIdCategories = 1,
  kIdNames = 2,
  kIdDebugNames = 3,
  kIdDebugStrings = 29,
  // EventName / EventCategory / DebugAnnotationName / InternedString: iid=1, name/str=2
};
constexpr uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;
constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr uint32_t kClockRealtime = 1, kClockBoottime = 6, kClockSeq = 64;

// ---------------- groups ----------------
int CanonicalPriority(const std::string& d) {  // larger = slower (outer) in the display order
  if (d == "pp") return 5;
  if (d == "dp") return 4;
  if (d == "ep") return 3;
  if (d == "cp") return 2;
  return 1;  // tp
}

// ---------------- inputs ----------------
struct StreamInfo {
  int16_t device;
  uint64_t stream;
  uint32_t kinds;  // bit per OpKind
};

struct FileInfo {
  std::string path;
  std::string dir;
  bool ok = false;
  std::string error;  // rejected: why; recovered: why it stopped
  Metadata meta;      // strings and comms dropped after pass 1
  uint64_t events = 0;
  std::vector<StreamInfo> streams;  // sorted by (device, stream)
  bool has_host = false;
  std::string node;
  int node_index = -1;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, int64_t>> ends;  // pass 1 only
  // Communicators as this file knows them (pass 1 only): id, size, (comm rank, global rank).
  struct CommSeen {
    uint64_t id;
    int32_t size;
    std::vector<std::pair<int32_t, int32_t>> members;
  };
  std::vector<CommSeen> comms;
};

// Communicators of the whole job, merged over every file: a node's daemon knows the global ranks
// of its own members only; the files of all nodes together name every member.
struct CommMembers {
  int32_t size = 0;
  std::map<int32_t, int32_t> global;  // communicator rank -> global rank, as far as files say
};
using CommTable = std::unordered_map<uint64_t, CommMembers>;

bool IsCollective(uint8_t kind) {
  return kind == static_cast<uint8_t>(OpKind::kCollective) ||
         kind == static_cast<uint8_t>(OpKind::kP2P);
}

void ListInputs(const std::vector<std::string>& inputs, std::vector<FileInfo>* files,
                std::vector<std::string>* skipped) {
  for (const std::string& in : inputs) {
    struct stat st;
    if (stat(in.c_str(), &st) != 0) {
      skipped->push_back(in + ": " + std::strerror(errno));
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      FileInfo f;
      f.path = in;
      size_t slash = in.rfind('/');
      f.dir = slash == std::string::npos ? "." : in.substr(0, slash);
      files->push_back(std::move(f));
      continue;
    }
    DIR* d = opendir(in.c_str());
    if (d == nullptr) {
      skipped->push_back(in + ": " + std::strerror(errno));
      continue;
    }
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 9 && n.compare(n.size() - 9, 9, ".timeline") == 0) names.push_back(n);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    if (names.empty()) skipped->push_back(in + ": no *.timeline files");
    for (const std::string& n : names) {
      FileInfo f;
      f.path = in + "/" + n;
      f.dir = in;
      files->push_back(std::move(f));
    }
  }
}

void Pass1(FileInfo* f) {
  std::map<std::pair<int16_t, uint64_t>, uint32_t> streams;
  bool has_host = false;
  ReadResult r = ReadTimeline(f->path, [&](const EventRecord& e) {
    if (e.kind == static_cast<uint8_t>(OpKind::kHostSync)) {
      has_host = true;
      return;
    }
    if (e.cpu_launch_ns > 0) has_host = true;
    streams[{e.device, e.stream}] |= 1u << (e.kind & 31);
    if (IsCollective(e.kind) && e.comm_id != 0) {
      f->ends.push_back({{e.comm_id, e.seq}, e.gpu_start_ns + std::max<int64_t>(e.duration_ns, 0)});
    }
  });
  f->ok = r.ok;
  f->error = r.error;
  f->events = r.events;
  f->meta = std::move(r.metadata);
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
  for (const auto& s : streams) f->streams.push_back({s.first.first, s.first.second, s.second});
  f->has_host = has_host;
  std::sort(f->ends.begin(), f->ends.end());
  f->node = !f->meta.host.empty() ? f->meta.host : !f->meta.node.empty() ? f->meta.node : f->dir;
}

int64_t Median(std::vector<int64_t>* v) {
  if (v->empty()) return 0;
  size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  int64_t hi = (*v)[mid];
  if (v->size() % 2 == 1) return hi;
  int64_t lo = *std::max_element(v->begin(), v->begin() + mid);
  return lo + (hi - lo) / 2;
}

// Differences a - b over shared keys.
std::vector<int64_t> SharedDiffs(const NodeEnds& a, const NodeEnds& b) {
  std::vector<int64_t> d;
  size_t i = 0, j = 0;
  while (i < a.ends.size() && j < b.ends.size()) {
    if (a.ends[i].first < b.ends[j].first) {
      ++i;
    } else if (b.ends[j].first < a.ends[i].first) {
      ++j;
    } else {
      d.push_back(a.ends[i].second - b.ends[j].second);
      ++i;
      ++j;
    }
  }
  return d;
}

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
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

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

uint64_t CollectiveFlowId(uint64_t comm, uint64_t seq) {
  return (Mix(comm, seq) & ~(3ull << 62)) | (1ull << 63);
}

// nccl-tests bus bytes for one op (docs/metrics.md), from the per-rank send buffer.
double BusBytes(uint16_t op, uint64_t bytes, int n) {
  using O = format::Operation;
  double s = static_cast<double>(bytes);
  if (n < 1) n = 1;
  switch (static_cast<O>(op)) {
    case O::kAllReduce:
      return s * 2.0 * (n - 1) / n;
    case O::kAllGather:  // send buffer is one rank's share: S = n * bytes
    case O::kGather:
    case O::kScatter:
      return s * n * (n - 1) / n;
    case O::kReduceScatter:  // send buffer is the full buffer: S = bytes
    case O::kAlltoAll:
      return s * (n - 1) / n;
    default:
      return s;
  }
}

double RoundSignificant(double v, int digits) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * scale) / scale;
}

// ---------------- per-sequence encoder ----------------
class Sequence {
 public:
  Sequence(std::string* out, uint32_t seq_id, uint64_t track_uuid, int64_t first_ts)
      : out_(out), seq_id_(seq_id), last_ts_(first_ts) {
    std::string p, d, ted, cs, clk;
    wire::U64(&p, kPktSeqId, seq_id);
    wire::U64(&p, kPktSeqFlags, kSeqIncrementalStateCleared);
    wire::U64(&ted, kTedTrackUuid, track_uuid);
    wire::U64(&d, kDefClockId, kClockSeq);
    wire::Bytes(&d, kDefTrackEvent, ted);
    wire::Bytes(&p, kPktDefaults, d);
    wire::U64(&clk, kClkId, kClockRealtime);
    wire::U64(&clk, kClkTimestamp, static_cast<uint64_t>(first_ts));
    wire::Bytes(&cs, kCsClocks, clk);
    clk.clear();
    wire::U64(&clk, kClkId, kClockSeq);
    wire::U64(&clk, kClkTimestamp, static_cast<uint64_t>(first_ts));
    wire::U64(&clk, kClkIncremental, 1);
    wire::Bytes(&cs, kCsClocks, clk);
    wire::Bytes(&p, kPktClockSnapshot, cs);
    wire::Bytes(out_, kTracePacket, p);
  }

  uint64_t Intern(std::unordered_map<std::string, uint64_t>* table, uint32_t interned_field,
                  const std::string& s) {
    auto it = table->find(s);
    if (it != table->end()) return it->second;
    uint64_t iid = table->size() + 1;
    table->emplace(s, iid);
    std::string entry;
    wire::U64(&entry, 1, iid);
    wire::Bytes(&entry, 2, s);
    wire::Bytes(&interned_, interned_field, entry);
    return iid;
  }
  uint64_t Name(const std::string& s) { return Intern(&names_, kIdNames, s); }
  uint64_t Category(const std::string& s) { return Intern(&categories_, kIdCategories, s); }
  uint64_t ArgName(const char* s) {  // s is a literal: cache by address
    auto it = arg_name_cache_.find(s);
    if (it != arg_name_cache_.end()) return it->second;
    uint64_t iid = Intern(&arg_names_, kIdDebugNames, s);
    arg_name_cache_.emplace(s, iid);
    return iid;
  }
  // Interned ids cached by a caller-chosen binary key (avoids building the string per event).
  template <typename MakeFn>
  uint64_t CachedArgString(const std::string& key, MakeFn make) {
    auto it = arg_key_cache_.find(key);
    if (it != arg_key_cache_.end()) return it->second;
    uint64_t iid = ArgString(make());
    arg_key_cache_.emplace(key, iid);
    return iid;
  }
  template <typename MakeFn>
  uint64_t CachedName(uint64_t key, MakeFn make) {
    auto it = name_cache_.find(key);
    if (it != name_cache_.end()) return it->second;
    uint64_t iid = Name(make());
    name_cache_.emplace(key, iid);
    return iid;
  }
  uint64_t CachedCategory(uint8_t kind) {
    if (!category_cache_[kind]) {
      category_cache_[kind] = Category(format::OpKindName(static_cast<OpKind>(kind)));
    }
    return category_cache_[kind];
  }
  void ArgSIid(const char* name, uint64_t iid) { Arg(name, kDaStringIid, iid); }
  uint64_t ArgString(const std::string& s) { return Intern(&arg_strings_, kIdDebugStrings, s); }

  // Debug annotations for the next event.
  void ArgU(const char* name, uint64_t v) { Arg(name, kDaUint, v); }
  void ArgI(const char* name, int64_t v) { Arg(name, kDaInt, static_cast<uint64_t>(v)); }
  void ArgS(const char* name, const std::string& v) { Arg(name, kDaStringIid, ArgString(v)); }
  // A rate derived from a duration (TFLOPS, GB/s): rounded to 4 significant digits, which is
  // all anyone reads and lets the compressor find repeats (the duration itself is exact).
  void ArgRate(const char* name, double v) {
    scratch_.clear();
    v = RoundSignificant(v, 4);
    wire::U64(&scratch_, kDaNameIid, ArgName(name));
    wire::Double(&scratch_, kDaDouble, v);
    wire::Bytes(&args_, kTeDebug, scratch_);
  }
  void Flow(uint64_t id) { wire::Fixed64(&flows_, kTeFlowIds, id); }
  void TerminatingFlow(uint64_t id) { wire::Fixed64(&flows_, kTeTerminatingFlowIds, id); }

  void Begin(int64_t ts, uint64_t name_iid, uint64_t category_iid) {
    Emit(ts, kSliceBegin, name_iid, category_iid);
  }
  void Instant(int64_t ts, uint64_t name_iid, uint64_t category_iid) {
    Emit(ts, kInstant, name_iid, category_iid);
  }
  void End(int64_t ts) { Emit(ts, kSliceEnd, 0, 0); }
  int64_t last_ts() const { return last_ts_; }

 private:
  void Arg(const char* name, uint32_t field, uint64_t v) {
    scratch_.clear();
    wire::U64(&scratch_, kDaNameIid, ArgName(name));
    wire::U64(&scratch_, field, v);
    wire::Bytes(&args_, kTeDebug, scratch_);
  }
  void Emit(int64_t ts, uint32_t type, uint64_t name_iid, uint64_t category_iid) {
    te_.clear();
    if (category_iid) wire::U64(&te_, kTeCategoryIids, category_iid);
    te_.append(args_.data, args_.n);
    wire::U64(&te_, kTeType, type);
    if (name_iid) wire::U64(&te_, kTeNameIid, name_iid);
    te_.append(flows_.data, flows_.n);
    if (interned_.empty()) {
      pkt_.clear();
      wire::U64(&pkt_, kPktTimestamp, static_cast<uint64_t>(ts - last_ts_));
      wire::U64(&pkt_, kPktSeqId, seq_id_);
      wire::Bytes(&pkt_, kPktTrackEvent, te_);
      wire::Bytes(out_, kTracePacket, pkt_);
    } else {
      std::string pkt;
      wire::U64(&pkt, kPktTimestamp, static_cast<uint64_t>(ts - last_ts_));
      wire::U64(&pkt, kPktSeqId, seq_id_);
      wire::Bytes(&pkt, kPktInterned, interned_);
      wire::Bytes(&pkt, kPktTrackEvent, te_);
      wire::Bytes(out_, kTracePacket, pkt);
      interned_.clear();
    }
    last_ts_ = ts;
    args_.clear();
    flows_.clear();
  }

  std::string* out_;
  uint32_t seq_id_;
  int64_t last_ts_;
  std::unordered_map<std::string, uint64_t> names_, categories_, arg_names_, arg_strings_;
  std::unordered_map<const char*, uint64_t> arg_name_cache_;
  std::unordered_map<std::string, uint64_t> arg_key_cache_;
  std::unordered_map<uint64_t, uint64_t> name_cache_;
  uint64_t category_cache_[256] = {};
  // Bounded per event: at most 8 arguments of <= 24 bytes, 2 flow ids.
  std::string interned_;
  wire::FixedBuf<512> args_;
  wire::FixedBuf<64> flows_, scratch_;
  wire::FixedBuf<640> te_;
  wire::FixedBuf<704> pkt_;
};

struct Item {
  int64_t begin;
  int64_t end;     // == begin for instants
  uint32_t index;  // event index in the rank
  bool instant;
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

std::string Key(char tag, const void* p, size_t n) {
  std::string k(1, tag);
  k.append(static_cast<const char*>(p), n);
  return k;
}

// "0x… (4 ranks: 0 2 4 6)": the communicator and its members' global ranks ('?' where no file
// says; past 16 members, the first 16 and a count).
std::string CommLabel(uint64_t id, const CommTable& comms) {
  auto it = comms.find(id);
  if (it == comms.end()) return Hex(id);
  const CommMembers& c = it->second;
  std::string label = Hex(id) + " (" + std::to_string(c.size) + (c.size == 1 ? " rank" : " ranks");
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
      double flop = 2.0 * e.m * e.n * e.k * std::max<int64_t>(e.batch, 1);
      s->ArgRate("tflops", flop / dur / 1e3);
      break;
    }
    case OpKind::kCollective:
    case OpKind::kP2P: {
      auto it = comms.find(e.comm_id);
      int n = it == comms.end() ? 1 : it->second.size;
      s->ArgSIid("comm", s->CachedArgString(Key('c', &e.comm_id, 8),
                                            [&] { return CommLabel(e.comm_id, comms); }));
      s->ArgU("seq", e.seq);
      s->ArgU("bytes", e.bytes);
      s->ArgSIid("dtype", dtype());
      s->ArgRate("busbw_gbps", BusBytes(e.op, e.bytes, n) / dur);
      if (e.peer >= 0) s->ArgI("peer", e.peer);
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
  std::vector<int64_t> open;
  for (const Item& it : *items) {
    while (!open.empty() && open.back() <= it.begin) {
      s->End(open.back());
      open.pop_back();
    }
    while (!open.empty() && it.end > open.back()) {
      if (open.back() - it.begin > kOverlapNoiseNs) ++*truncated;
      s->End(it.begin);
      open.pop_back();
    }
    emit(it);
    if (!it.instant) open.push_back(it.end);
  }
  while (!open.empty()) {
    s->End(open.back());
    open.pop_back();
  }
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
  for (uint32_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    int64_t b = e.gpu_start_ns + off;
    int64_t en = b + std::max<int64_t>(e.duration_ns, 0);
    if (e.kind == static_cast<uint8_t>(OpKind::kHostSync)) {
      tracks[0].push_back({b, en, i, false});
      continue;
    }
    auto it = std::lower_bound(
        streams.begin(), streams.end(), e, [](const StreamInfo& s, const EventRecord& ev) {
          return s.device != ev.device ? s.device < ev.device : s.stream < ev.stream;
        });
    size_t t = 1 + static_cast<size_t>(it - streams.begin());
    if (it == streams.end() || it->device != e.device || it->stream != e.stream) continue;
    tracks[t].push_back({b, en, i, false});
    if (opt.launches && e.cpu_launch_ns > 0) {
      // A launch cannot follow its GPU start; where the two clocks say so (by the GPU-to-host
      // alignment error, about a microsecond) the instant is put at the start, so that the
      // launch flow runs forward in time (Perfetto drops flows that run backwards).
      int64_t c = std::min(e.cpu_launch_ns, e.gpu_start_ns) + off;
      tracks[0].push_back({c, c, i, true});
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
      std::string name =
          "dev " + std::to_string(si.device) + " " +
          (si.stream == 0 ? std::string("default stream") : "stream " + Hex(si.stream)) + " (" +
          KindsLabel(si.kinds) + ")";
      thread_track(uuid, tid, name);
    }
    int64_t first = tracks[t][0].begin;
    for (const Item& it : tracks[t]) first = std::min(first, it.begin);
    Sequence seq(out, ctx.first_seq + static_cast<uint32_t>(t), uuid, first);
    EmitTrack(&tracks[t], &seq, &res.truncated, [&](const Item& it) {
      const EventRecord& e = events[it.index];
      uint64_t name = seq.CachedName((static_cast<uint64_t>(e.name) << 16) | e.op,
                                     [&] { return EventName(e, m); });
      uint64_t cat = seq.CachedCategory(e.kind);
      if (it.instant) {
        seq.Flow(launch_base | it.index);
        seq.Instant(it.begin, name, cat);
        return;
      }
      if (opt.args) AddArgs(&seq, e, *ctx.comms);
      if (opt.flows && IsCollective(e.kind) && e.comm_id != 0) {
        seq.Flow(CollectiveFlowId(e.comm_id, e.seq));
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

int GroupLayout::world() const {
  int w = 1;
  for (const auto& d : dims) w *= d.second;
  return w;
}

std::vector<int> GroupLayout::Coordinates(int rank) const {
  std::vector<int> c;
  for (const auto& d : dims) {
    c.push_back(rank % d.second);
    rank /= d.second;
  }
  return c;
}

std::string GroupLayout::Label(int rank) const {
  std::vector<int> c = Coordinates(rank);
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return CanonicalPriority(dims[a].first) > CanonicalPriority(dims[b].first);
  });
  std::string s;
  for (size_t i : order) {
    if (dims[i].second == 1) continue;
    if (!s.empty()) s += ' ';
    s += dims[i].first + std::to_string(c[i]);
  }
  return s;
}

int64_t GroupLayout::OrderKey(int rank) const {
  std::vector<int> c = Coordinates(rank);
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return CanonicalPriority(dims[a].first) > CanonicalPriority(dims[b].first);
  });
  int64_t key = 0;
  for (size_t i : order) key = key * dims[i].second + c[i];
  return key;
}

bool ParseGroupLayout(const std::string& text, GroupLayout* layout, std::string* error) {
  layout->dims.clear();
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t dash = text.find('-', pos);
    std::string part = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (part.size() < 3) {
      *error = "bad group '" + part + "' in '" + text + "': expected e.g. tp2";
      return false;
    }
    std::string name = part.substr(0, 2);
    if (name != "tp" && name != "cp" && name != "ep" && name != "dp" && name != "pp") {
      *error = "unknown group '" + name + "' in '" + text + "' (tp, cp, ep, dp, pp)";
      return false;
    }
    if (!seen.insert(name).second) {
      *error = "group '" + name + "' given twice in '" + text + "'";
      return false;
    }
    std::string num = part.substr(2);
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(num) < 1) {
      *error = "bad size '" + num + "' for group '" + name + "' in '" + text + "'";
      return false;
    }
    layout->dims.push_back({name, std::stoi(num)});
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  return true;
}

std::vector<int64_t> EstimateClockOffsets(const std::vector<NodeEnds>& nodes,
                                          std::vector<int>* reference_of) {
  size_t n = nodes.size();
  std::vector<int64_t> offset(n, 0);
  reference_of->assign(n, -1);
  if (n == 0) return offset;
  size_t ref = 0;
  for (size_t i = 1; i < n; ++i) {
    if (nodes[i].ends.size() > nodes[ref].ends.size()) ref = i;
  }
  std::vector<bool> aligned(n, false);
  aligned[ref] = true;
  (*reference_of)[ref] = static_cast<int>(ref);
  // Prim-like: repeatedly attach the unaligned node sharing most collectives with an aligned one.
  std::vector<size_t> best_count(n, 0);
  std::vector<int> best_link(n, -1);
  auto update = [&](size_t a) {
    for (size_t u = 0; u < n; ++u) {
      if (aligned[u]) continue;
      size_t c = SharedDiffs(nodes[a], nodes[u]).size();
      if (c > best_count[u]) {
        best_count[u] = c;
        best_link[u] = static_cast<int>(a);
      }
    }
  };
  update(ref);
  for (;;) {
    int pick = -1;
    for (size_t u = 0; u < n; ++u) {
      if (!aligned[u] && best_link[u] >= 0 && (pick < 0 || best_count[u] > best_count[pick])) {
        pick = static_cast<int>(u);
      }
    }
    if (pick < 0) break;
    size_t a = static_cast<size_t>(best_link[pick]);
    std::vector<int64_t> d = SharedDiffs(nodes[a], nodes[pick]);
    offset[pick] = offset[a] + Median(&d);
    aligned[pick] = true;
    (*reference_of)[pick] = static_cast<int>(a);
    update(pick);
  }
  return offset;
}

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
  ListInputs(opt.inputs, &files, &stats->skipped);
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
  std::map<std::string, std::unordered_map<uint64_t, std::unordered_map<uint64_t, int64_t>>>
      node_ends;
  parallel(files.size(), [&](size_t i) {
    FileInfo& f = files[i];
    Pass1(&f);
    if (f.ok && opt.align_clocks) {
      std::lock_guard<std::mutex> lock(mu);
      auto& ne = node_ends[f.node];
      for (const auto& e : f.ends) {
        auto ins = ne[e.first.first].emplace(e.first.second, e.second);
        if (!ins.second && e.second < ins.first->second) ins.first->second = e.second;
      }
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
  CommTable comms;
  for (FileInfo* f : ranks) {
    for (const FileInfo::CommSeen& seen : f->comms) {
      CommMembers& c = comms[seen.id];
      if (c.size == 0) c.size = seen.size;
      if (c.size != seen.size) {
        stats->warnings.push_back(f->path + ": communicator " + Hex(seen.id) + " has " +
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
    if (it != node_ends.end()) {
      for (const auto& c : it->second) {
        for (const auto& s : c.second) ne.ends.push_back({{c.first, s.first}, s.second});
      }
    }
    std::sort(ne.ends.begin(), ne.ends.end());
    nodes.push_back(std::move(ne));
  }
  node_ends.clear();
  std::vector<int> reference_of;
  std::vector<int64_t> offsets = opt.align_clocks ? EstimateClockOffsets(nodes, &reference_of)
                                                  : std::vector<int64_t>(nodes.size(), 0);
  if (!opt.align_clocks) reference_of.assign(nodes.size(), -1);
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
                   nodes[reference_of[i]].node.c_str(),
                   SharedDiffs(nodes[reference_of[i]], nodes[i]).size());
    }
  }
  for (NodeEnds& ne : nodes) {
    ne.ends.clear();
    ne.ends.shrink_to_fit();
  }
  for (FileInfo* f : ranks) f->node_index = node_index[f->node];

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

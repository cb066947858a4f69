// One Perfetto packet sequence (one track): its incremental clock, interned strings and the
// TrackEvents of its slices, encoded straight into a buffer (docs/perfetto.md).
#ifndef XTIMER_TIMELINE_PACKET_SEQUENCE_H_
#define XTIMER_TIMELINE_PACKET_SEQUENCE_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "format/record.h"
#include "timeline/proto_wire.h"

namespace xtimer {
namespace timeline {

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

// v rounded to `digits` significant digits (rates: all anyone reads, and repeats compress).
inline double RoundSignificant(double v, int digits) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * scale) / scale;
}

// Adds to a ClockSnapshot one clock, `id`, that reads `ts` at the snapshot.
inline void AddClock(std::string* snapshot, uint32_t id, int64_t ts, bool incremental = false) {
  std::string clk;
  wire::U64(&clk, kClkId, id);
  wire::U64(&clk, kClkTimestamp, static_cast<uint64_t>(ts));
  if (incremental) wire::U64(&clk, kClkIncremental, 1);
  wire::Bytes(snapshot, kCsClocks, clk);
}

class Sequence {
 public:
  Sequence(std::string* out, uint32_t seq_id, uint64_t track_uuid, int64_t first_ts)
      : out_(out), seq_id_(seq_id), last_ts_(first_ts) {
    std::string p, d, ted, cs;
    wire::U64(&p, kPktSeqId, seq_id);
    wire::U64(&p, kPktSeqFlags, kSeqIncrementalStateCleared);
    wire::U64(&ted, kTedTrackUuid, track_uuid);
    wire::U64(&d, kDefClockId, kClockSeq);
    wire::Bytes(&d, kDefTrackEvent, ted);
    wire::Bytes(&p, kPktDefaults, d);
    AddClock(&cs, kClockRealtime, first_ts);
    AddClock(&cs, kClockSeq, first_ts, /*incremental=*/true);
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
      category_cache_[kind] = Category(format::OpKindName(static_cast<format::OpKind>(kind)));
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
  template <typename Out>
  void WriteTrackEvent(Out* te, uint32_t type, uint64_t name_iid, uint64_t category_iid) {
    if (category_iid) wire::U64(te, kTeCategoryIids, category_iid);
    te->append(args_.data, args_.n);
    wire::U64(te, kTeType, type);
    if (name_iid) wire::U64(te, kTeNameIid, name_iid);
    te->append(flows_.data(), flows_.size());
  }
  // The event in fixed buffers where it fits (an op's slice: a few flows), else in strings (new
  // interned data; a host range's flows, one per op launched in it, have no bound).
  void Emit(int64_t ts, uint32_t type, uint64_t name_iid, uint64_t category_iid) {
    if (interned_.empty() && flows_.size() <= kFixedFlowBytes) {
      te_.clear();
      WriteTrackEvent(&te_, type, name_iid, category_iid);
      pkt_.clear();
      wire::U64(&pkt_, kPktTimestamp, static_cast<uint64_t>(ts - last_ts_));
      wire::U64(&pkt_, kPktSeqId, seq_id_);
      wire::Bytes(&pkt_, kPktTrackEvent, te_);
      wire::Bytes(out_, kTracePacket, pkt_);
    } else {
      std::string te, pkt;
      WriteTrackEvent(&te, type, name_iid, category_iid);
      wire::U64(&pkt, kPktTimestamp, static_cast<uint64_t>(ts - last_ts_));
      wire::U64(&pkt, kPktSeqId, seq_id_);
      if (!interned_.empty()) wire::Bytes(&pkt, kPktInterned, interned_);
      wire::Bytes(&pkt, kPktTrackEvent, te);
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
  // Bounded per event: at most 8 arguments of <= 24 bytes. Flow ids are 10 bytes each: an op's
  // slice carries at most 3, a host range one per op launched in it (unbounded).
  static constexpr size_t kFixedFlowBytes = 64;
  std::string interned_, flows_;
  wire::FixedBuf<512> args_;
  wire::FixedBuf<64> scratch_;
  wire::FixedBuf<640> te_;
  wire::FixedBuf<704> pkt_;
};

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_PACKET_SEQUENCE_H_

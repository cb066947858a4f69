#include "timeline/trace_decoder.h"

#include <zlib.h>

#include <cstdio>
#include <utility>

namespace xtimer {
namespace timeline {
namespace {

using perfetto::protos::Trace;
using perfetto::protos::TracePacket;
using perfetto::protos::TrackEvent;

constexpr uint32_t kSequenceClock = 64;  // the converter's incremental clock id

// Inflates a zlib stream (what Perfetto's own packet compressor writes) with zlib itself, a
// different implementation from the converter's libdeflate.
bool Inflate(const std::string& in, std::string* out, std::string* error) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) {
    *error = "inflateInit failed";
    return false;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[1 << 16];
  int ret = Z_OK;
  while (ret == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    ret = inflate(&z, Z_NO_FLUSH);
    out->append(buf, sizeof(buf) - z.avail_out);
  }
  inflateEnd(&z);
  if (ret != Z_STREAM_END) {
    *error = "zlib: " + std::string(z.msg ? z.msg : "truncated stream");
    return false;
  }
  return true;
}

class Decoder {
 public:
  explicit Decoder(DecodedTrace* d) : d_(d) {}

  void Packets(const Trace& trace, bool nested) {
    for (const TracePacket& p : trace.packet()) Packet(p, nested);
  }

  void Finish() {
    for (auto& kv : seqs_) {
      if (!kv.second.open.empty())
        Error("sequence " + std::to_string(kv.first) + ": " +
              std::to_string(kv.second.open.size()) + " slices never ended");
    }
  }

 private:
  struct SeqState {
    int64_t clock = 0;
    bool has_clock = false;
    uint64_t track = 0;
    std::map<uint64_t, std::string> names, cats, arg_names, arg_strings;
    std::vector<DecodedSlice> open;
  };

  void Error(const std::string& e) {
    if (d_->errors.size() < 20) d_->errors.push_back(e);
  }

  void Packet(const TracePacket& p, bool nested) {
    if (p.has_compressed_packets()) {
      if (nested) return Error("compressed_packets inside compressed_packets");
      std::string raw, error;
      Trace inner;
      if (!Inflate(p.compressed_packets(), &raw, &error)) return Error(error);
      if (!inner.ParseFromString(raw)) return Error("compressed_packets: not a Trace");
      ++d_->compressed_packets;
      return Packets(inner, true);
    }
    if (p.has_track_descriptor()) {
      d_->tracks[p.track_descriptor().uuid()] = p.track_descriptor();
      return;
    }
    if (p.has_clock_snapshot() && !p.has_trusted_packet_sequence_id()) {
      d_->primary_realtime =
          p.clock_snapshot().primary_trace_clock() == perfetto::protos::BUILTIN_CLOCK_REALTIME;
      return;
    }
    if (!p.has_trusted_packet_sequence_id()) return Error("packet without a sequence id");
    uint32_t id = p.trusted_packet_sequence_id();
    SeqState& s = seqs_[id];
    if (p.sequence_flags() & TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
      s = SeqState();
      if (p.trace_packet_defaults().timestamp_clock_id() != kSequenceClock)
        Error("sequence " + std::to_string(id) + ": defaults without clock 64");
      s.track = p.trace_packet_defaults().track_event_defaults().track_uuid();
    }
    if (p.has_clock_snapshot()) {
      for (const auto& c : p.clock_snapshot().clocks()) {
        if (c.clock_id() != kSequenceClock) continue;
        if (!c.is_incremental()) Error("clock 64 is not incremental");
        s.clock = static_cast<int64_t>(c.timestamp());
        s.has_clock = true;
      }
      return;
    }
    const auto& in = p.interned_data();
    for (const auto& n : in.event_names()) {
      s.names[n.iid()] = n.name();
      d_->names.insert(n.name());
    }
    for (const auto& n : in.event_categories()) s.cats[n.iid()] = n.name();
    for (const auto& n : in.debug_annotation_names()) s.arg_names[n.iid()] = n.name();
    for (const auto& n : in.debug_annotation_string_values()) s.arg_strings[n.iid()] = n.str();
    if (!p.has_track_event()) return Error("sequence packet without a track event");
    if (!s.has_clock) return Error("track event before its sequence's clock snapshot");
    s.clock += static_cast<int64_t>(p.timestamp());
    const TrackEvent& te = p.track_event();
    if (te.type() == TrackEvent::TYPE_SLICE_END) {
      if (s.open.empty()) return Error("slice end without a begin");
      DecodedSlice sl = std::move(s.open.back());
      s.open.pop_back();
      sl.dur = s.clock - sl.ts;
      // Flows on an end event belong to the slice it ends.
      sl.flows.insert(sl.flows.end(), te.flow_ids().begin(), te.flow_ids().end());
      sl.terminating.insert(sl.terminating.end(), te.terminating_flow_ids().begin(),
                            te.terminating_flow_ids().end());
      d_->slices.push_back(std::move(sl));
      return;
    }
    DecodedSlice sl;
    sl.track = s.track;
    sl.ts = s.clock;
    auto name = s.names.find(te.name_iid());
    if (name == s.names.end()) {
      Error("event name iid " + std::to_string(te.name_iid()) + " unknown");
    } else {
      sl.name = name->second;
    }
    if (te.category_iids_size()) sl.category = s.cats[te.category_iids(0)];
    for (const auto& a : te.debug_annotations()) {
      auto an = s.arg_names.find(a.name_iid());
      if (an == s.arg_names.end()) {
        Error("argument name iid " + std::to_string(a.name_iid()) + " unknown");
        continue;
      }
      std::string v;
      if (a.has_string_value_iid()) {
        auto it = s.arg_strings.find(a.string_value_iid());
        if (it == s.arg_strings.end()) Error("argument string iid unknown");
        else v = it->second;
      } else if (a.has_uint_value()) {
        v = std::to_string(a.uint_value());
      } else if (a.has_int_value()) {
        v = std::to_string(a.int_value());
      } else if (a.has_double_value()) {
        char b[32];
        std::snprintf(b, sizeof(b), "%.17g", a.double_value());
        v = b;
      }
      sl.args[an->second] = v;
    }
    sl.flows.assign(te.flow_ids().begin(), te.flow_ids().end());
    sl.terminating.assign(te.terminating_flow_ids().begin(), te.terminating_flow_ids().end());
    if (te.type() == TrackEvent::TYPE_INSTANT)
      d_->instants.push_back(std::move(sl));
    else if (te.type() == TrackEvent::TYPE_SLICE_BEGIN)
      s.open.push_back(std::move(sl));
    else
      Error("unexpected track event type " + std::to_string(te.type()));
  }

  DecodedTrace* d_;
  std::map<uint32_t, SeqState> seqs_;
};

}  // namespace

DecodedTrace DecodeTrace(const std::string& bytes) {
  DecodedTrace d;
  Trace trace;
  if (!trace.ParseFromString(bytes)) {
    d.errors.push_back("not a Trace message");
    return d;
  }
  Decoder dec(&d);
  dec.Packets(trace, false);
  dec.Finish();
  return d;
}

int PidOfTrack(const DecodedTrace& d, uint64_t uuid) {
  auto it = d.tracks.find(uuid);
  if (it == d.tracks.end()) return -1;
  return it->second.has_thread() ? it->second.thread().pid() : it->second.process().pid();
}

}  // namespace timeline
}  // namespace xtimer

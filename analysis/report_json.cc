#include "analysis/report_json.h"

#include <cmath>
#include <cstdio>

#include "analysis/passes.h"
#include "util/json.h"

namespace xtimer {
namespace analysis {
namespace {

// Appends "key": to an object, with the comma when needed.
class Object {
 public:
  explicit Object(std::string* out) : out_(out) { *out_ += '{'; }
  ~Object() { *out_ += '}'; }
  std::string* Key(const char* key) {
    if (!first_) *out_ += ',';
    first_ = false;
    *out_ += JsonQuote(key) + ':';
    return out_;
  }
  void Str(const char* key, const std::string& v) { *Key(key) += JsonQuote(v); }
  void Int(const char* key, int64_t v) { *Key(key) += std::to_string(v); }
  void Uint(const char* key, uint64_t v) { *Key(key) += std::to_string(v); }
  void Num(const char* key, double v);

 private:
  std::string* out_;
  bool first_ = true;
};

std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void Object::Num(const char* key, double v) { *Key(key) += Number(v); }

template <typename T, typename F>
void Array(std::string* out, const std::vector<T>& items, F each) {
  *out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) *out += ',';
    each(items[i]);
  }
  *out += ']';
}

void Ints(std::string* out, const std::vector<int32_t>& v) {
  Array(out, v, [out](int32_t x) { *out += std::to_string(x); });
}

void Strings(std::string* out, const std::vector<std::string>& v) {
  Array(out, v, [out](const std::string& s) { *out += JsonQuote(s); });
}

void Verdict(std::string* out, const HangVerdict& v) {
  Object o(out);
  o.Str("kind", HangKindName(v.kind));
  Ints(o.Key("culprit_ranks"), v.culprit_ranks);
  Ints(o.Key("waiting_ranks"), v.waiting_ranks);
  o.Str("comm", CommText(v.comm_id));
  o.Uint("seq", v.seq);
  if (v.op == 0) {
    *o.Key("op") += "null";
  } else {
    o.Str("op", OpText(v.op));
  }
  *o.Key("point_to_point") += v.point_to_point ? "true" : "false";
  if (v.mismatch.empty()) {
    *o.Key("mismatch") += "null";
  } else {
    o.Str("mismatch", v.mismatch);
  }
  o.Num("stalled_s", v.stalled_s);
  o.Num("threshold_s", v.threshold_s);
  *o.Key("downstream") += v.downstream ? "true" : "false";
  Strings(o.Key("evidence"), v.evidence);
}

void StragglerJson(std::string* out, const Straggler& s) {
  Object o(out);
  if (s.rank < 0) {
    *o.Key("rank") += "null";
  } else {
    o.Int("rank", s.rank);
  }
  o.Str("comm", CommText(s.comm_id));
  o.Num("share_last", s.share_last);
  o.Num("mean_lateness_s", s.mean_lateness_s);
  o.Num("wait_caused_s", s.wait_caused_s);
  o.Str("cause", CauseName(s.cause));
  if (s.group.empty()) {
    *o.Key("group") += "null";
  } else {
    o.Str("group", s.group);
  }
  Strings(o.Key("evidence"), s.evidence);
  if (s.cause != Cause::kHost) return;
  o.Num("host_idle_s", s.host_idle_s);
  Array(o.Key("host"), s.host, [out](const HostActivity& h) {
    Object a(out);
    a.Str("kind", h.kind);
    a.Str("name", h.name);
    a.Str("text", h.text);
    a.Num("seconds", h.seconds);
  });
}

void BandwidthJson(std::string* out, const BusBandwidth& b) {
  Object o(out);
  o.Int("rank", b.rank);
  o.Str("comm", CommText(b.comm_id));
  o.Str("op", OpText(b.op));
  o.Uint("bytes", b.bytes);
  o.Uint("instances", b.instances);
  o.Num("observed_bytes_per_second", b.observed_bytes_per_second());
  o.Num("true_bytes_per_second", b.true_bytes_per_second());
}

void StepJson(std::string* out, const RankStepStats& s) {
  Object o(out);
  o.Int("rank", s.rank);
  o.Uint("count", s.count);
  o.Num("median_s", s.median_s);
  o.Num("p10_s", s.p10_s);
  o.Num("p90_s", s.p90_s);
}

void RankJson(std::string* out, const RankStats& r) {
  Object o(out);
  o.Int("rank", r.rank);
  o.Uint("instances", r.instances);
  o.Uint("arrived_last", r.arrived_last);
  o.Num("wait_s", r.wait_s);
  o.Num("transfer_s", r.transfer_s);
  o.Num("wait_caused_s", r.wait_caused_s);
}

void InputsJson(std::string* out, const ReportInputs& in) {
  Object o(out);
  Strings(o.Key("files"), in.files);
  Ints(o.Key("ranks"), in.ranks);
  Ints(o.Key("missing_ranks"), in.missing_ranks);
  Strings(o.Key("warnings"), in.warnings);
  if (in.groups.empty()) {
    *o.Key("groups") += "null";
  } else {
    o.Str("groups", in.groups);
  }
}

}  // namespace

std::string HangVerdictJson(const HangVerdict& verdict) {
  std::string out;
  Verdict(&out, verdict);
  return out;
}

std::string ReportJson(const Report& report, const ReportContext& context) {
  std::string out;
  {
    Object o(&out);
    if (report.hangs.empty()) {
      *o.Key("hang") += "null";
    } else {
      Verdict(o.Key("hang"), report.hangs.front());
    }
    Array(o.Key("hangs"), report.hangs, [&out](const HangVerdict& v) { Verdict(&out, v); });
    Array(o.Key("stragglers"), report.stragglers,
          [&out](const Straggler& s) { StragglerJson(&out, s); });
    Array(o.Key("true_bus_bandwidth"), report.bus_bandwidth,
          [&out](const BusBandwidth& b) { BandwidthJson(&out, b); });
    Array(o.Key("ranks"), report.ranks, [&out](const RankStats& r) { RankJson(&out, r); });
    Array(o.Key("steps"), report.steps, [&out](const RankStepStats& s) { StepJson(&out, s); });
    if (report.bounding_stage < 0) {
      *o.Key("bounding_stage") += "null";
    } else {
      o.Int("bounding_stage", report.bounding_stage);
    }
    o.Uint("instances", report.instances);
    {
      Object offsets(o.Key("clock_offsets_s"));
      for (const auto& n : context.clock_offsets_s) offsets.Num(n.first.c_str(), n.second);
    }
    InputsJson(o.Key("inputs"), context.inputs);
  }
  return out;
}

}  // namespace analysis
}  // namespace xtimer

#include "proto/wire_arrival.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "format/record.h"
#include "proto/wire_enums.h"

namespace xtimer {
namespace proto {
namespace {

// Seconds of a message as ns: 0 for negative or NaN, at most 10^9 s.
int64_t DurationNs(double s) {
  return s > 0 ? static_cast<int64_t>(std::llround(std::min(s, 1e9) * 1e9)) : 0;
}

}  // namespace

CollectiveArrival::State StateField(analysis::OpState state) {
  switch (state) {
    case analysis::OpState::kCompleted: return CollectiveArrival::completed;
    case analysis::OpState::kStarted: return CollectiveArrival::started;
    case analysis::OpState::kQueued: return CollectiveArrival::queued;
    case analysis::OpState::kIssued: return CollectiveArrival::issued;  // untimed, in flight
  }
  return CollectiveArrival::STATE_UNSPECIFIED;
}

analysis::OpState OpStateOf(CollectiveArrival::State state) {
  switch (state) {
    case CollectiveArrival::started: return analysis::OpState::kStarted;
    case CollectiveArrival::queued: return analysis::OpState::kQueued;
    case CollectiveArrival::issued: return analysis::OpState::kIssued;
    default: return analysis::OpState::kCompleted;
  }
}

std::string CommIdField(uint64_t id) {
  char buf[format::kCommIdTextSize];
  return format::CommIdText(id, buf);
}

uint64_t CommIdOf(const std::string& text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* digits = text.c_str() + (hex ? 2 : 0);
  if (*digits == '\0' || *digits == '-' || *digits == '+' || std::isspace(*digits)) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long id = std::strtoull(digits, &end, hex ? 16 : 10);
  return errno == 0 && *end == '\0' ? id : 0;
}

double AgeOf(int64_t now_ns, int64_t then_ns) {
  return std::max(0.0, static_cast<double>(now_ns - then_ns) * 1e-9);
}

int64_t TimeOfAge(int64_t now_ns, double age_s) {
  return now_ns - DurationNs(age_s);
}

void FillArrival(const analysis::Arrival& a, int64_t now_ns, CollectiveArrival* out) {
  out->set_comm_id(CommIdField(a.comm_id));
  out->set_seq(a.seq);
  out->set_count(a.count);
  out->set_bytes(a.bytes);
  out->set_op(OpCodeOf(a.op));
  out->set_dtype(DTypeCodeOf(a.dtype));
  out->set_state(StateField(a.state));
  out->set_root(a.root);
  out->set_comm_size(a.comm_size);
  out->set_issue_age_s(a.issue_ns > 0 ? AgeOf(now_ns, a.issue_ns) : 0);
  out->set_start_age_s(a.start_ns > 0 ? AgeOf(now_ns, a.start_ns) : 0);
  out->set_end_age_s(a.end_ns > 0 ? AgeOf(now_ns, a.end_ns) : 0);
  out->set_busy_before_s(static_cast<double>(a.busy_before_ns) * 1e-9);
  out->set_idle_before_s(static_cast<double>(a.idle_before_ns) * 1e-9);
  out->set_gap_begin_age_s(a.gap_begin_ns > 0 ? AgeOf(now_ns, a.gap_begin_ns) : 0);
}

analysis::Arrival ArrivalOf(const CollectiveArrival& a, int64_t now_ns) {
  analysis::Arrival r;
  r.comm_id = CommIdOf(a.comm_id());
  r.seq = a.seq();
  r.count = a.count();
  r.bytes = a.bytes();
  r.op = OperationOf(a.op());
  r.dtype = DTypeOf(a.dtype());
  r.state = OpStateOf(a.state());
  r.root = a.root();
  r.comm_size = a.comm_size();
  r.issue_ns = TimeOfAge(now_ns, a.issue_age_s());
  const bool started = r.state == analysis::OpState::kStarted ||
                       r.state == analysis::OpState::kCompleted;
  if (started) r.start_ns = TimeOfAge(now_ns, a.start_age_s());
  if (r.state == analysis::OpState::kCompleted) r.end_ns = TimeOfAge(now_ns, a.end_age_s());
  r.busy_before_ns = DurationNs(a.busy_before_s());
  r.idle_before_ns = DurationNs(a.idle_before_s());
  if (a.gap_begin_age_s() > 0) r.gap_begin_ns = TimeOfAge(now_ns, a.gap_begin_age_s());
  return r;
}

void FillHostSpan(const analysis::HostSpan& h, int64_t now_ns, HostSpan* out) {
  out->set_name(h.name);
  out->set_domain(h.domain);
  out->set_category(h.category);
  out->set_tid(h.tid);
  out->set_start_age_s(AgeOf(now_ns, h.start_ns));
  out->set_end_age_s(AgeOf(now_ns, h.end_ns));
}

analysis::HostSpan HostSpanOf(const HostSpan& h, int64_t now_ns) {
  analysis::HostSpan r;
  r.name = h.name();
  r.domain = h.domain();
  r.category = h.category();
  r.tid = h.tid();
  r.start_ns = TimeOfAge(now_ns, h.start_age_s());
  r.end_ns = TimeOfAge(now_ns, h.end_age_s());
  return r;
}

}  // namespace proto
}  // namespace xtimer

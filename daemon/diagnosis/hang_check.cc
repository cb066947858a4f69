#include "daemon/diagnosis/hang_check.h"

#include <algorithm>

#include <google/protobuf/util/json_util.h>

#include "format/record.h"
#include "proto/wire_arrival.h"
#include "proto/wire_enums.h"

namespace xtimer {
namespace daemon {
namespace {

using proto::AgeOf;
using proto::CommIdField;

void FillRank(const std::string& job, const RankLive& r, const std::string& node, int64_t now_ns,
              bool arrivals, RankProgress* out) {
  const ProcessSnapshot& p = r.process;
  const analysis::RankInput& in = r.input;
  out->set_job(job);
  out->set_rank(p.rank);
  out->set_local_rank(p.local_rank);
  out->set_world_size(p.world_size);
  out->set_pid(p.pid);
  out->set_device(in.device);
  out->set_node(node);
  out->set_host(p.host);
  out->set_exited(p.exited);
  if (p.exited) {
    out->set_exit_cause(proto::ExitCauseCodeOf(p.exit_cause.kind));
    out->set_exit_code(in.exit.code);
    out->set_exited_age_s(AgeOf(now_ns, p.exited_ns));
  }
  out->set_last_activity(in.last_activity);
  out->set_last_activity_age_s(in.last_activity_ns > 0 ? AgeOf(now_ns, in.last_activity_ns) : -1);
  if (arrivals) {
    for (const analysis::Arrival& a : in.arrivals) proto::FillArrival(a, now_ns, out->add_recent());
    for (const analysis::HostSpan& h : in.host_spans) {
      proto::FillHostSpan(h, now_ns, out->add_host_spans());
    }
  }
  for (const CommSnapshot& c : p.comms) {
    if (c.comm_id == 0) continue;
    CommProgress* cp = out->add_comms();
    FillCommProgress(p, c, r.Comm(c.comm_id), now_ns, cp);
    for (const analysis::Communicator& comm : in.comms) {
      if (comm.id != c.comm_id) continue;
      for (int32_t m : comm.members) cp->add_members(m);
    }
  }
}

void FillVerdict(const std::string& job, const analysis::HangVerdict& v,
                 const std::string& dump_dir, HangVerdict* out) {
  out->set_job(job);
  out->set_kind(VerdictKindOf(v.kind));
  out->set_comm_id(CommIdField(v.comm_id));
  out->set_seq(v.seq);
  out->set_op(proto::OpCodeOf(v.op));
  for (int32_t r : v.culprit_ranks) out->add_culprit_ranks(r);
  for (int32_t r : v.waiting_ranks) out->add_waiting_ranks(r);
  MismatchField::Value field;
  if (MismatchField::Value_Parse(v.mismatch, &field)) out->set_mismatch(field);
  out->set_stalled_s(v.stalled_s);
  out->set_threshold_s(v.threshold_s);
  out->set_downstream(v.downstream);
  for (const std::string& e : v.evidence) out->add_evidence(e);
  out->set_dump_dir(dump_dir);
}

}  // namespace

void FillCommProgress(const ProcessSnapshot& p, const CommSnapshot& c, const CommLive* decision,
                      int64_t now_ns, CommProgress* out) {
  out->set_comm_id(CommIdField(c.comm_id));
  out->set_parent_id(CommIdField(c.parent_id));
  out->set_comm_rank(c.comm_rank);
  out->set_comm_size(c.comm_size);
  out->set_device(c.device);
  out->set_last_issued_seq(c.last_issued_seq);
  out->set_last_completed_seq(c.last_completed_seq);
  out->set_oldest_inflight_age_s(InflightAgeSeconds(p, c.oldest_launch_ns));
  out->set_last_completed_age_s(c.last_completed_ns > 0 ? AgeOf(now_ns, c.last_completed_ns) : -1);
  if (decision != nullptr) {
    out->set_hang(decision->waiting);
    out->set_hang_threshold_s(decision->threshold_s);
    out->set_cadence_samples(decision->cadence_samples);
  }
  if (c.inflight.state == format::InflightState::kNone) return;
  proto::FillArrival(InflightArrival(c.comm_id, c.inflight), now_ns, out->mutable_inflight());
  out->set_blocked_by(c.blocked_by);
  out->set_blocked_by_communication(format::QueuedBehindCommunication(c.inflight));
  if (out->blocked_by_communication() && c.inflight.blocker.comm_id != 0) {
    out->set_blocked_by_comm_id(CommIdField(c.inflight.blocker.comm_id));
  }
}

void FillHangCheck(const LiveState& state, const HangCheckRequest& request,
                   const std::string& node, HangCheckResponse* out) {
  const std::string& job = request.job();
  out->set_node(node);
  out->set_now(static_cast<double>(state.now_ns) * 1e-9);
  for (const JobLive& j : state.jobs) {
    if (!job.empty() && j.job != job) continue;
    for (const analysis::HangVerdict& v : j.report.hangs) {
      FillVerdict(j.job, v, j.dump_dir, out->add_verdicts());
    }
    for (const RankLive& r : j.ranks) {
      FillRank(j.job, r, node, state.now_ns, request.arrivals(), out->add_ranks());
    }
  }
}

VerdictKind::Value VerdictKindOf(analysis::HangKind kind) {
  const int v = static_cast<int>(kind);  // the same numbers (hosting.proto; hang_check_test)
  return VerdictKind::Value_IsValid(v) ? static_cast<VerdictKind::Value>(v)
                                       : VerdictKind::VERDICT_KIND_UNSPECIFIED;
}

bool MessageToJson(const google::protobuf::Message& message, std::string* json,
                   std::string* error) {
  namespace pbu = google::protobuf::util;
  pbu::JsonPrintOptions o;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  json->clear();
  auto st = pbu::MessageToJsonString(message, json, o);
  if (!st.ok()) {
    *error = std::string(st.message());
    return false;
  }
  json->push_back('\n');
  return true;
}

}  // namespace daemon
}  // namespace xtimer

// The HangCheck control method's answer (proto/hosting.proto HangCheckResponse) from the live
// diagnosis's state, and its proto3 JSON form (the curl answer and hang-summary.json).
#ifndef XTIMER_DAEMON_HANG_CHECK_H_
#define XTIMER_DAEMON_HANG_CHECK_H_

#include <cstdint>
#include <string>

#include <google/protobuf/message.h>

#include "daemon/diagnosis/diagnosis.h"
#include "proto/hosting.pb.h"

namespace xtimer {
namespace daemon {

// The verdicts and every rank's progress of the jobs in `state` (only request.job() when not
// empty; with each rank's recent collectives when request.arrivals()).
void FillHangCheck(const LiveState& state, const HangCheckRequest& request,
                   const std::string& node, HangCheckResponse* out);

// A communicator's progress on a rank (every field of CommProgress but members): the facts of
// the process snapshot `p` (ages up to p.observed_ns and `now_ns`), and the live diagnosis's
// decision for it (hang, hang_threshold_s, cadence_samples; left unset when `decision` is
// null). Status's and HangCheck's one filler.
void FillCommProgress(const ProcessSnapshot& p, const CommSnapshot& c, const CommLive* decision,
                      int64_t now_ns, CommProgress* out);

// A verdict's kind on the wire (VerdictKind carries analysis::HangKind's numbers and names).
VerdictKind::Value VerdictKindOf(analysis::HangKind kind);

// proto3 JSON as the control port prints it (field names as in the .proto, every field present,
// 64-bit integers as strings), with a final newline. Returns false with *error.
bool MessageToJson(const google::protobuf::Message& message, std::string* json,
                   std::string* error);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_HANG_CHECK_H_

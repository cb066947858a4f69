// analysis::Arrival and its state on the control service's wire (hosting.proto
// CollectiveArrival), and the host spans matched against arrivals (HostSpan), both ways: the one
// set of these conversions, for the daemon that writes
// HangCheck and Status answers (daemon/diagnosis) and the CLI that reads them (live answers of
// `xtimer analyze --hosts`, the hang-summary.json of an automatic dump).
//
// The messages carry times as ages, seconds before the answer's `now`, and communicator ids as
// hex text (format::CommIdText); a reader gets times back on its own clock: now_ns - age.
#ifndef XTIMER_PROTO_WIRE_ARRIVAL_H_
#define XTIMER_PROTO_WIRE_ARRIVAL_H_

#include <cstdint>
#include <string>

#include "analysis/analysis.h"
#include "proto/hosting.pb.h"

namespace xtimer {
namespace proto {

// Where an op is, on the wire (every OpState has a value; wire_arrival_test).
CollectiveArrival::State StateField(analysis::OpState state);
// The inverse; STATE_UNSPECIFIED (a message that does not set it) and any value a newer daemon
// may add read as kCompleted, as an answer without a state always meant.
analysis::OpState OpStateOf(CollectiveArrival::State state);

// A communicator id as the messages carry it: format::CommIdText's hex text.
std::string CommIdField(uint64_t id);
// The inverse: hex text ("0x00000000000000ab"), or decimal as hang summaries written before the
// hex text carry it; 0 for text that is neither.
uint64_t CommIdOf(const std::string& text);

// Seconds from then_ns to now_ns, at least 0.
double AgeOf(int64_t now_ns, int64_t then_ns);
// `age_s` seconds before now_ns (ages <= 0 give now_ns; at most 10^9 s).
int64_t TimeOfAge(int64_t now_ns, double age_s);

// `a` as an answer taken at now_ns carries it (a time of 0, unknown, as age 0).
void FillArrival(const analysis::Arrival& a, int64_t now_ns, CollectiveArrival* out);
// The inverse on the reader's clock: GPU start only for a started or completed op, GPU end only
// for a completed one (0 otherwise, as analysis::Arrival says).
analysis::Arrival ArrivalOf(const CollectiveArrival& a, int64_t now_ns);

// A host span as an answer taken at now_ns carries it, and back on the reader's clock.
void FillHostSpan(const analysis::HostSpan& h, int64_t now_ns, HostSpan* out);
analysis::HostSpan HostSpanOf(const HostSpan& h, int64_t now_ns);

}  // namespace proto
}  // namespace xtimer

#endif  // XTIMER_PROTO_WIRE_ARRIVAL_H_

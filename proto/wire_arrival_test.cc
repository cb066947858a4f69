#include "proto/wire_arrival.h"

#include <cmath>
#include <cstdint>

#include "format/ring.h"
#include "gtest/gtest.h"

namespace xtimer {
namespace proto {
namespace {

constexpr int64_t kNow = 1000000000000;  // 1000 s

// Every state the analysis defines has its own value on the wire and comes back from it, and the
// wire names no state the analysis lacks: an `issued` collective (left untimed by the overhead
// budget) stays in flight on the way through a HangCheck answer.
TEST(WireArrivalTest, EveryOpStateHasAWireStateAndBack) {
  int defined = 0;
  for (int v = 0; v < 256; ++v) {
    const auto state = static_cast<analysis::OpState>(v);
    const CollectiveArrival::State wire = StateField(state);
    if (wire == CollectiveArrival::STATE_UNSPECIFIED) continue;
    ++defined;
    EXPECT_EQ(OpStateOf(wire), state) << v;
  }
  // Every value of the wire's enum but STATE_UNSPECIFIED was reached.
  EXPECT_EQ(defined, CollectiveArrival::State_descriptor()->value_count() - 1);
}

TEST(WireArrivalTest, EveryWireStateHasAnOpStateAndBack) {
  const auto* d = CollectiveArrival::State_descriptor();
  for (int i = 0; i < d->value_count(); ++i) {
    const auto wire = static_cast<CollectiveArrival::State>(d->value(i)->number());
    if (wire == CollectiveArrival::STATE_UNSPECIFIED) {
      EXPECT_EQ(OpStateOf(wire), analysis::OpState::kCompleted);
      continue;
    }
    EXPECT_EQ(StateField(OpStateOf(wire)), wire) << d->value(i)->name();
  }
  EXPECT_EQ(OpStateOf(static_cast<CollectiveArrival::State>(99)), analysis::OpState::kCompleted);
}

// The wire spells the ring's in-flight states as the metrics' `state` label does (format/ring.h,
// whose numbers are the analysis's).
TEST(WireArrivalTest, WireNamesAreTheMetricsStateLabel) {
  EXPECT_EQ(CollectiveArrival::State_Name(StateField(analysis::OpState::kCompleted)), "completed");
  for (auto s : {format::InflightState::kStarted, format::InflightState::kQueued,
                 format::InflightState::kIssued}) {
    const auto state = static_cast<analysis::OpState>(s);
    EXPECT_EQ(CollectiveArrival::State_Name(StateField(state)), format::InflightStateName(s));
  }
}

analysis::Arrival Completed() {
  analysis::Arrival a;
  a.comm_id = 0xc0ffee0000000002ull;
  a.seq = 41;
  a.count = 1 << 20;
  a.bytes = 4 << 20;
  a.op = static_cast<uint16_t>(format::Operation::kAllReduce);
  a.dtype = static_cast<uint8_t>(format::DType::kF32);
  a.state = analysis::OpState::kCompleted;
  a.root = 3;
  a.comm_size = 8;
  a.issue_ns = kNow - 5000000000;
  a.start_ns = kNow - 4000000000;
  a.end_ns = kNow - 1000000000;
  a.busy_before_ns = 2500000;
  a.idle_before_ns = 1250000;
  a.gap_begin_ns = kNow - 4500000000;
  return a;
}

void ExpectSame(const analysis::Arrival& got, const analysis::Arrival& want) {
  EXPECT_EQ(got.comm_id, want.comm_id);
  EXPECT_EQ(got.seq, want.seq);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(got.op, want.op);
  EXPECT_EQ(got.dtype, want.dtype);
  EXPECT_EQ(got.state, want.state);
  EXPECT_EQ(got.root, want.root);
  EXPECT_EQ(got.comm_size, want.comm_size);
  EXPECT_EQ(got.issue_ns, want.issue_ns);
  EXPECT_EQ(got.start_ns, want.start_ns);
  EXPECT_EQ(got.end_ns, want.end_ns);
  EXPECT_EQ(got.busy_before_ns, want.busy_before_ns);
  EXPECT_EQ(got.idle_before_ns, want.idle_before_ns);
  EXPECT_EQ(got.gap_begin_ns, want.gap_begin_ns);
}

// An arrival written at the daemon's `now` reads back the same on the reader's clock, whatever
// its state; a reader whose clock is 7 s ahead gets every time 7 s later.
TEST(WireArrivalTest, AnArrivalRoundTripsInEveryState) {
  for (auto state : {analysis::OpState::kCompleted, analysis::OpState::kStarted,
                     analysis::OpState::kQueued, analysis::OpState::kIssued}) {
    analysis::Arrival a = Completed();
    a.state = state;
    if (state != analysis::OpState::kCompleted) a.end_ns = 0;
    if (state == analysis::OpState::kQueued || state == analysis::OpState::kIssued) a.start_ns = 0;
    CollectiveArrival wire;
    FillArrival(a, kNow, &wire);
    SCOPED_TRACE(CollectiveArrival::State_Name(wire.state()));
    ExpectSame(ArrivalOf(wire, kNow), a);
    analysis::Arrival later = a;
    for (int64_t* t : {&later.issue_ns, &later.start_ns, &later.end_ns, &later.gap_begin_ns}) {
      if (*t != 0) *t += 7000000000;
    }
    ExpectSame(ArrivalOf(wire, kNow + 7000000000), later);
  }
}

// An arrival without an interval before it (its rank's first collective) carries none back: the
// host spans are matched against no window of it.
TEST(WireArrivalTest, NoGapStaysNoGap) {
  analysis::Arrival a = Completed();
  a.gap_begin_ns = 0;
  CollectiveArrival wire;
  FillArrival(a, kNow, &wire);
  EXPECT_EQ(wire.gap_begin_age_s(), 0);
  EXPECT_EQ(ArrivalOf(wire, kNow).gap_begin_ns, 0);
}

// A host span (a Python data-loader wait) reads back the same on the reader's clock, 7 s later on
// a clock 7 s ahead.
TEST(WireArrivalTest, AHostSpanRoundTrips) {
  analysis::HostSpan h;
  h.name = "__main__:Loader.__next__";
  h.domain = "xtimer.python";
  h.category = 3;
  h.tid = 4242;
  h.start_ns = kNow - 2250000000;
  h.end_ns = kNow - 2050000000;
  HostSpan wire;
  FillHostSpan(h, kNow, &wire);
  for (int64_t shift : {int64_t{0}, int64_t{7000000000}}) {
    const analysis::HostSpan got = HostSpanOf(wire, kNow + shift);
    EXPECT_EQ(got.name, h.name);
    EXPECT_EQ(got.domain, h.domain);
    EXPECT_EQ(got.category, h.category);
    EXPECT_EQ(got.tid, h.tid);
    EXPECT_EQ(got.start_ns, h.start_ns + shift);
    EXPECT_EQ(got.end_ns, h.end_ns + shift);
  }
}

TEST(WireArrivalTest, CommIdsBothWays) {
  for (uint64_t id : {uint64_t{0}, uint64_t{0xab}, uint64_t{0xc0ffee0000000002ull}, UINT64_MAX}) {
    EXPECT_EQ(CommIdOf(CommIdField(id)), id);
  }
  EXPECT_EQ(CommIdField(0xab), "0x00000000000000ab");
  EXPECT_EQ(CommIdOf("0x00000000000000ab"), 0xabu);
  EXPECT_EQ(CommIdOf("171"), 171u);  // decimal, as older hang summaries carry it
  EXPECT_EQ(CommIdOf("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(CommIdOf(""), 0u);
  EXPECT_EQ(CommIdOf("0x"), 0u);
  EXPECT_EQ(CommIdOf("-1"), 0u);
  EXPECT_EQ(CommIdOf(" 1"), 0u);
  EXPECT_EQ(CommIdOf("0xab junk"), 0u);
  EXPECT_EQ(CommIdOf("18446744073709551616"), 0u);
}

TEST(WireArrivalTest, AgesBothWays) {
  EXPECT_DOUBLE_EQ(AgeOf(kNow, kNow - 1500000000), 1.5);
  EXPECT_EQ(AgeOf(kNow, kNow + 1), 0.0);  // a time after `now`: age 0
  EXPECT_EQ(TimeOfAge(kNow, 1.5), kNow - 1500000000);
  EXPECT_EQ(TimeOfAge(kNow, 0), kNow);
  EXPECT_EQ(TimeOfAge(kNow, -3), kNow);
  EXPECT_EQ(TimeOfAge(kNow, std::nan("")), kNow);
  EXPECT_EQ(TimeOfAge(kNow, 1e300), kNow - 1000000000 * int64_t{1000000000});
}

}  // namespace
}  // namespace proto
}  // namespace xtimer

#include "timeline/steps_track.h"

#include <string>

#include "format/record.h"

namespace xtimer {
namespace timeline {

void StepsTrackBuilder::Add(const EventRecord& e) {
  if (e.kind != static_cast<uint8_t>(format::OpKind::kCollective) || e.comm_id == 0 ||
      e.gpu_start_ns <= 0) {
    return;
  }
  analysis::Arrival a;
  a.comm_id = e.comm_id;
  a.seq = e.seq;
  a.bytes = e.bytes;
  a.op = e.op;
  a.dtype = e.dtype;
  a.root = e.root;
  a.start_ns = e.gpu_start_ns;
  collectives_.push_back(a);
}

StepsTrack StepsTrackBuilder::Finish(const Metadata& m) const {
  StepsTrack t;
  t.steps = analysis::MarkedSteps(MarkedStepStarts(m));
  if (!t.steps.empty()) {
    t.source = "marked";
    return t;
  }
  const analysis::StepGuess g = analysis::GuessSteps(collectives_);
  t.steps = analysis::GuessedSteps(collectives_, g);
  if (t.steps.empty()) return t;
  t.guessed = true;
  char comm[format::kCommIdTextSize];
  t.source = "guessed: every " + std::to_string(g.per_step) + " collectives on comm " +
             format::CommIdText(g.comm_id, comm);
  return t;
}

}  // namespace timeline
}  // namespace xtimer

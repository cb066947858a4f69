// Internal to the converter: the steps a rank's `steps` track draws (docs/perfetto.md, trace
// layout). The steps its job marked (analysis/steps.h MarkedSteps of timeline_io.h
// MarkedStepStarts); where it marked none, the steps guessed from its recurring collectives
// (analysis/steps.h GuessSteps, GuessedSteps), labelled as guessed; else none (no track).
#ifndef XTIMER_TIMELINE_STEPS_TRACK_H_
#define XTIMER_TIMELINE_STEPS_TRACK_H_

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/steps.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace timeline {

struct StepsTrack {
  std::vector<analysis::MarkedStep> steps;  // on the file's clock; empty: no track
  bool guessed = false;
  std::string source;  // the slices' `source` argument: "marked", or how it was guessed
};

// Pass 1 feeds it every event of a file, then asks for the track.
class StepsTrackBuilder {
 public:
  void Add(const EventRecord& e);
  StepsTrack Finish(const Metadata& m) const;

 private:
  std::vector<analysis::Arrival> collectives_;
};

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_STEPS_TRACK_H_

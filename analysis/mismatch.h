// Internal to analysis/: members whose collectives differ (op, dtype, count, root), grouped by
// what they did, and the majority judged. The hang verdicts (hang.cc) use it.
#ifndef XTIMER_ANALYSIS_MISMATCH_H_
#define XTIMER_ANALYSIS_MISMATCH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/comm_index.h"

namespace xtimer {
namespace analysis {

// What a member did at an instance; the fields Flight Recorder compares.
struct Signature {
  uint16_t op = 0;
  uint8_t dtype = 0;
  uint64_t count = 0;
  int32_t root = -1;
  bool operator==(const Signature& o) const {
    return op == o.op && dtype == o.dtype && count == o.count && root == o.root;
  }
};

Signature SignatureOf(const Arrival& a);

// Members grouped by signature, in order of first appearance.
using SigGroups = std::vector<std::pair<Signature, std::vector<int32_t>>>;
void AddToGroups(const Signature& sig, int32_t rank, SigGroups* groups);

// Whether the `given` members can tell the right signature: they are the whole communicator of
// `comm_size`, or one group alone is more than half of it.
bool MajorityCertain(const SigGroups& groups, size_t given, int32_t comm_size);

// The largest group (ties: the one holding the lowest global rank) is right; every other
// member is a culprit. Fills op, mismatch, culprits and evidence; `verb` is "issued" or
// "completed". Returns the majority's index.
size_t FillMismatch(const SigGroups& groups, const char* verb, const std::string& where,
                    HangVerdict* v);

// Completed instances whose members' signatures differ: a mismatch even without a stall.
void CompletedMismatch(const std::vector<RankInput>& ranks, const CommView& comm,
                       std::vector<HangVerdict>* out);

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_MISMATCH_H_

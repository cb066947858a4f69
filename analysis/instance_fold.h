// Internal to analysis/: a communicator's completed arrivals folded one instance at a time, in
// seq order, into what the hang and straggler passes read. No pass needs every arrival at once:
// Analyze folds its index of the arrivals (comm_index.h), AnalysisStream folds them as a reader
// delivers them (analysis.h); both give the passes the same facts.
#ifndef XTIMER_ANALYSIS_INSTANCE_FOLD_H_
#define XTIMER_ANALYSIS_INSTANCE_FOLD_H_

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/host_spans.h"

namespace xtimer {
namespace analysis {

struct CommView;
struct CommEntry;

// One member's straggler sums on one communicator (nanoseconds).
struct SlotSums {
  uint64_t instances = 0;
  uint64_t last = 0;
  double lateness = 0;
  double wait = 0;
  double wait_caused = 0;
  double transfer = 0;
  double busy = 0;
  double idle = 0;
  // Over the instances it arrived last in: the GPU's idle time before those arrivals, and what
  // of it the rank's host spans are credited with (HostIndex::Credit, by the rank's label).
  double late_idle = 0;
  std::vector<double> host;
};

// Instances of one (op, bytes) on a communicator: the unit of bus bandwidth.
struct SigSums {
  uint16_t op = 0;
  uint64_t bytes = 0;
  double bus_bytes = 0;                 // per instance (opmath)
  std::vector<double> transfers;        // per instance, in seq order
  std::vector<double> own;              // per slot: the member's own GPU time
  std::vector<uint64_t> own_instances;  // per slot
  double transfer_total() const {
    double t = 0;
    for (double x : transfers) t += x;
    return t;
  }
};

// The complete instances of a communicator, summed (stragglers.cc judges them).
struct CommSums {
  const CommView* comm = nullptr;  // set by the straggler pass
  std::vector<SlotSums> slots;
  std::vector<SigSums> sigs;
  uint64_t instances = 0;
  double transfer = 0;
  int64_t first_start = INT64_MAX, last_end = INT64_MIN;  // over the instances
  bool slow_link = false;
  double span_ns() const {
    return instances ? static_cast<double>(last_end - first_start) : 0.0;
  }
};

// A member's completed arrival kept whole.
struct KeptArrival {
  uint32_t slot = 0;
  Arrival arrival;
};

// What the passes read of a communicator's completed arrivals.
struct CommFacts {
  std::vector<int64_t> instance_ends;  // per instance in seq order: its latest end, when > 0
  std::vector<uint64_t> last_completed;  // per slot: the highest seq it completed
  std::vector<uint8_t> has_completed;    // per slot
  int64_t last_end = 0;                  // the latest end of any arrival
  uint64_t instances = 0;                // instances (complete or not)
  uint64_t bad_instances = 0;            // instances whose members' signatures differ
  std::vector<KeptArrival> first_bad;    // the first of those, by slot
  // Instances the hang pass may look into (SeqsToKeep), by seq; members by slot.
  std::vector<uint64_t> keep_seqs;  // sorted
  std::map<uint64_t, std::vector<KeptArrival>> kept;
  CommSums sums;
};

// The instances whose arrivals the hang pass may ask for (CommHang::CompletedAt at the stall):
// for each member with progress on the communicator, its in-flight seq and the seq after the
// last it completed (`last_seq[slot]`, when `has_last[slot]`, or its progress's). Sorted.
std::vector<uint64_t> SeqsToKeep(const CommView& comm, const std::vector<RankInput>& ranks,
                                 const std::vector<uint64_t>& last_seq,
                                 const std::vector<uint8_t>& has_last);

// Folds the instances of one communicator, given in ascending seq order.
class InstanceFolder {
 public:
  // `comm`'s members and size are final; its facts are (re)started here. `hosts`, when given,
  // is every input rank's HostIndex (by its index among the inputs); it must outlive the folder.
  InstanceFolder(CommView* comm, const Options& options,
                 const std::vector<HostIndex>* hosts = nullptr);
  // One instance: the entries of one seq, ascending slot.
  void Fold(const CommEntry* entries, size_t n);

 private:
  bool Distinct(const CommEntry* e, size_t n);
  SigSums& SigOf(const Arrival& a);
  void Sums(const CommEntry* e, size_t n);
  void CreditHost(const CommEntry& last);

  CommView* comm_;
  const std::vector<HostIndex>* hosts_;
  std::vector<int64_t> edges_;  // HostIndex::Credit's scratch
  CommFacts* facts_;
  size_t required_ = 0;  // members an instance needs to be summed; 0: none is
  std::vector<uint64_t> stamp_;
  std::vector<int64_t> starts_, ends_;
};

}  // namespace analysis
}  // namespace xtimer

#endif  // XTIMER_ANALYSIS_INSTANCE_FOLD_H_

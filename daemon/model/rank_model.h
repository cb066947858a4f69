// The rank model (docs/ranks.md): what op, name and comm records and a ring's status do to a
// process's ranks. A process is one rank until its communicators live on two devices; then each
// device with a communicator is a rank with its own series and communicators. Op records count in
// their device's rank's series (sliding windows, daemon/model/window.h) and its communicators'
// progress (daemon/model/comm_progress.h); the in-flight rows of a status go to their device's
// rank. What grows is reserved and charged through the process registry's memory budget.
//
// Thread safety: none; the aggregator's lock guards it with the registry.
#ifndef XTIMER_DAEMON_MODEL_RANK_MODEL_H_
#define XTIMER_DAEMON_MODEL_RANK_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daemon/model/aggregator_options.h"
#include "daemon/model/process_registry.h"
#include "daemon/model/process_state.h"
#include "daemon/model/snapshot.h"
#include "format/record.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {

// One op record ingested: the device of the rank it counts for (RankKey::device with the tap's
// process id: kWholeProcess for a process with one rank), the process's op sequence number
// (0, 1, ... per process) and the record (valid for the tap's call only).
struct TapOp {
  int rank_device;
  uint64_t seq;
  const format::OpRecord* op;
};

class RankModel {
 public:
  // `registry` reserves and charges what the ranks grow by; it must outlive the model.
  RankModel(const AggregatorOptions& options, ProcessRegistry* registry)
      : options_(options), registry_(registry) {}

  // A run of op records of process p, ingested at `now_ns`. *epoch: the windows' step at now_ns,
  // computed by the first op that needs it (-1 before). With `taps`, each op is appended to it.
  void Ops(ProcessState* p, const format::RecordSlot* slots, size_t n, int64_t now_ns,
           int64_t* epoch, std::vector<TapOp>* taps);
  // Runs of name and communicator records.
  void Names(ProcessState* p, const format::RecordSlot* slots, size_t n);
  void Comms(ProcessState* p, const format::RecordSlot* slots, size_t n, int64_t now_ns);
  // NVTX events and strings: kept in the process's NVTX history.
  void Nvtx(ProcessState* p, const format::RecordSlot* slots, size_t n);
  void NvtxStrings(ProcessState* p, const format::RecordSlot* slots, size_t n);
  // A ring's status (its identity already checked by the registry): counters, and the in-flight
  // rows moved into their ranks' communicators when the table was valid.
  void ApplyStatus(ProcessState* p, const format::Identity& identity, const ProcessStatus& status);

  // The retained records of p, oldest first: all of them (kWholeProcess), or those of its rank
  // on `device`.
  static std::vector<format::OpRecord> History(const ProcessState& p, int device);

 private:
  void Op(ProcessState* p, const format::OpRecord& r, int64_t now_ns, int64_t* epoch,
          std::vector<TapOp>* taps);
  // A new series of `key` on `rank` for op `r`, when there is room; nullptr when there is none
  // (the op is counted as unaggregated).
  Series* AddSeries(ProcessState* p, RankState* rank, const format::OpRecord& r, uint64_t key);
  // A completed op of one of rank's communicators: its progress.
  void NoteCompleted(RankState* rank, const format::OpRecord& r, int64_t dur, int64_t now_ns);
  // The rank of a communicator on `device`, adding one when this is the process's second device
  // (or a further one) with a communicator.
  RankState* RankForComm(ProcessState* p, int device);
  // The rank an in-flight row counts for: its device's; for a row without one (ring version 1),
  // the first rank that holds its communicator, else the first.
  static RankState* RankOfRow(const ProcessState& p, const format::InflightRow& row);

  const AggregatorOptions options_;
  ProcessRegistry* const registry_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_RANK_MODEL_H_

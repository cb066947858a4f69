// The daemon's model of every registered process, assembled from the parts that own its data
// (docs/daemon.md "Model"): the process registry (processes, exits, identity claims, refusals and
// the memory budget's enforcement, daemon/model/process_registry.h), the rank model (what records
// and ring status do to a process's ranks: series, sliding windows, communicator progress,
// daemon/model/rank_model.h) and the snapshot builder (daemon/model/snapshot_builder.h). The
// facade routes records by kind and feeds the op taps; it knows nothing about sockets, rings or
// Prometheus: the RingServer feeds it records and ring-header status, exporters read Snapshot()s.
// Tests drive it with synthetic records and clocks.
//
// Ranks. A process is one registration, but it may drive several devices (JAX one process per
// host, nccl-tests -g N, ncclCommInitAll): each device that holds a communicator rank is then a
// rank of its own, with its own series and communicators (docs/ranks.md). A process whose
// communicators all live on one device (torchrun: one process per GPU) is one rank, named by its
// identity.
//
// Records reach it through one table of record kinds indexed by the type byte (AddRecordKind adds
// a kind in one registration, no switch).
//
// Thread safety: every public method takes one internal mutex, so the ingest thread and
// scrapes can call it concurrently.
#ifndef XTIMER_DAEMON_AGGREGATOR_H_
#define XTIMER_DAEMON_AGGREGATOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model/aggregator_options.h"
#include "daemon/model/process_registry.h"
#include "daemon/model/python_stats.h"
#include "daemon/model/rank_model.h"
#include "daemon/model/snapshot.h"
#include "format/record.h"
#include "format/record_kinds.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {

class Aggregator {
 public:
  explicit Aggregator(const AggregatorOptions& options, int64_t start_ns = 0);
  ~Aggregator();
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  // A process registered (ring attached), unless its identity is bound to another owner
  // (daemon/model/identity_claims.h): then 0, and the refusal is counted by cause. Processes of
  // another
  // uid that a privileged registrant takes the job from are removed and listed in *evicted (may
  // be null): their connections must be closed. Ids are never reused.
  ProcessId AddProcess(const Registrant& who, const format::Identity& identity,
                       std::vector<ProcessId>* evicted);
  // The same for a process of the daemon's own uid without a token (tests, tools).
  ProcessId AddProcess(int pid, const format::Identity& identity);
  // Forgets the process at once: all its series disappear (the daemon stopping).
  void RemoveProcess(ProcessId id);
  // The process's connection closed (`now_ns` CLOCK_REALTIME): it is kept, frozen, for the
  // exited grace period (or removed at once when the grace is 0); bounds are applied.
  void MarkExited(ProcessId id, const ExitCause& cause, int64_t now_ns);
  // Records the crashing frame of the process's crash report (shown in the exited verdict).
  void SetCrashFrame(ProcessId id, const std::string& frame);
  // Removes exited processes past their grace period. Returns how many. Called periodically:
  // also returns freed memory to the system (see MaybeTrimMalloc).
  size_t ExpireExited(int64_t now_ns);
  // Memory freed on the aggregator's behalf by another part of the daemon (the live diagnosis
  // forgetting ranks that left): the next ExpireExited returns it to the system.
  void NoteFreed(size_t bytes);
  // False once MarkExited was called (or the id is unknown).
  bool Connected(ProcessId id) const;
  // A registration refused before or at AddProcess: counted by `cause` and logged (rate-limited)
  // with `peer` ("pid P uid U").
  void RefuseRegistration(const std::string& cause, const std::string& peer);
  // Refusals counted so far for `cause`.
  uint64_t refused(const std::string& cause) const;
  // The estimated bytes held by every process's state (the memory budget's unit).
  size_t memory_bytes() const;

  // `records` passed kinds().Validate already. `now_ns` is the daemon's CLOCK_REALTIME at ingest.
  // Each record goes to the handler its kind registered (op, name and comm are built in).
  void Ingest(ProcessId id, const format::RecordSlot* records, size_t n, int64_t now_ns);
  // A record kind beyond the built-in ones, in one registration: `kind` tells the ring readers
  // how to validate it (kinds()), and `handler` gets each valid record of the type, with its
  // process, under the aggregator's lock (so it must be quick and must not call the aggregator).
  // Register before any ingest; replaces an earlier registration of `type`.
  using RecordHandler = std::function<void(ProcessId, const format::RecordSlot&)>;
  void AddRecordKind(uint8_t type, format::RecordKind kind, RecordHandler handler);
  // The kinds this aggregator ingests: what its ring readers must accept (RingReader::set_kinds).
  const format::RecordKinds& kinds() const { return kinds_; }
  // The job, host and pod stay as registered; a new rank is checked as a registration is. False
  // when the process was removed for claiming another owner's rank (counted as a refusal): its
  // connection must be closed.
  bool UpdateStatus(ProcessId id, const ProcessStatus& status);

  // `now_ns`: CLOCK_REALTIME (windows, hang and heartbeat ages). Without `with_series` the
  // processes' op series (and their sliding-window statistics, the costly part) are left out:
  // the live diagnosis needs only identities, exits and communicators.
  Snapshot TakeSnapshot(int64_t now_ns, bool with_series = true) const;

  size_t process_count() const;
  // The retained OpRecords of a rank, oldest first (for dumps): of the whole process
  // (kWholeProcess: all of them, whatever ranks it has) or of its rank on one device
  // (ProcessSnapshot::key()). *end_seq (if given) gets the op sequence number (see OpTap) one
  // past the last record of the process.
  std::vector<format::OpRecord> History(const RankKey& rank, uint64_t* end_seq = nullptr) const;
  // Called once per ingested batch of a process with its op records in order (n >= 1), under
  // the aggregator's lock: it must be quick and must not call the aggregator. One call per batch,
  // not per op, so that a tap takes its own lock once per read. Dumps capture with one
  // (daemon/dumps/dump_writer.h), the live diagnosis feeds its summaries with another
  // (daemon/model/live_ops.h). Taps run in the order added; AddOpTap returns the id that
  // RemoveOpTap takes.
  using OpTap = std::function<void(ProcessId, const TapOp* ops, size_t n)>;
  int AddOpTap(OpTap tap);
  void RemoveOpTap(int id);
  // The kernel name for a name_id, or "" when unknown.
  std::string KernelName(ProcessId id, uint32_t name_id) const;
  // The process's NVTX events that meet [begin_ns, end_ns] (daemon/model/nvtx_history.h), in
  // ingest order, and the texts of the strings they name (id -> text; unknown ids left out).
  std::vector<format::NvtxRecord> NvtxEvents(ProcessId id, int64_t begin_ns, int64_t end_ns,
                                             std::map<uint32_t, std::string>* strings) const;

  // The process's Python totals (daemon/model/python_stats.h); empty when it is unknown.
  PythonStats PythonTotals(ProcessId id) const;

  const AggregatorOptions& options() const { return options_; }

  // For tests and daemon_bench: history chunks allocated so far (a full history rotates through
  // its own), and how often freed memory was handed back to the system (malloc_trim).
  uint64_t history_chunks_allocated() const;
  uint64_t memory_returns() const;

 private:
  // One Ingest call's records of one process: what every kind's handler is given.
  struct IngestBatch {
    ProcessState* p;
    ProcessId id;
    int64_t now_ns;
    int64_t epoch = -1;  // the windows' step at now_ns, computed by the batch's first op
  };
  // A kind's handler takes a run of consecutive records of its kind (a ring holds long runs of op
  // records): one dispatch per run, not per record. Need mu_.
  using KindHandler = void (Aggregator::*)(IngestBatch& batch, const format::RecordSlot* slots,
                                           size_t n);
  void RegisterBuiltinKinds();
  void IngestLocked(ProcessState* p, ProcessId id, const format::RecordSlot* records, size_t n,
                    int64_t now_ns);
  void IngestOps(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  void IngestNames(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  void IngestComms(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  void IngestNvtx(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  void IngestNvtxStrings(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  void IngestExtras(IngestBatch& b, const format::RecordSlot* slots, size_t n);
  // Returns freed memory to the system (daemon/base/memory_return.h). Call without mu_.
  void MaybeTrimMalloc();

  const AggregatorOptions options_;
  const int64_t start_ns_;
  mutable std::mutex mu_;
  ProcessRegistry registry_;  // guarded by mu_ (its budget's returner has its own lock)
  RankModel ranks_;           // guarded by mu_
  std::vector<std::pair<int, OpTap>> taps_;
  std::vector<TapOp> tap_ops_;  // the batch's ops for the taps (reused: no allocation per batch)
  // The record kinds, indexed by type byte: how readers validate them, and who ingests them.
  format::RecordKinds kinds_;
  std::array<KindHandler, 256> handlers_{};
  std::array<RecordHandler, 256> extra_handlers_;
  int next_tap_ = 1;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_AGGREGATOR_H_

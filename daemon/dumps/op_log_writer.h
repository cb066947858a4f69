// The op log's writer (docs/oplog.md): an Aggregator op tap that only queues, and a thread that
// turns the queue into the per-rank op logs and the per-job anomaly logs.
//
// Ingest never waits for the disk: the tap (on the ring-reader thread, under the aggregator's
// lock) drops at once the ops of processes that asked for no log, and appends the others to a
// bounded queue under this class's own short lock; a full queue drops and counts. The thread
// swaps the queue out every poll interval, learns which process is which rank and which format
// it asked for from an Aggregator snapshot (without series), judges every op with the job's
// AnomalyDetector, keeps the ops that pass the filters and the sample, formats them and hands
// them to OpLogFiles, which it flushes every flush interval.
#ifndef XTIMER_DAEMON_OP_LOG_WRITER_H_
#define XTIMER_DAEMON_OP_LOG_WRITER_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/dumps/anomaly.h"
#include "daemon/dumps/op_log.h"
#include "daemon/dumps/op_log_files.h"
#include "daemon/model/aggregator.h"

namespace xtimer {
namespace daemon {

// --op-log: which processes get a log.
enum class OpLogMode {
  kOff,    // none, whatever XTIMER_LOG says (no tap is installed)
  kJob,    // those whose XTIMER_LOG asks for one, in the format asked (the default)
  kJsonl,  // every process, JSONL unless its XTIMER_LOG says csv
  kCsv,    // every process, CSV unless its XTIMER_LOG says jsonl
};
// "off", "job", "jsonl", "csv"; false with *error otherwise.
bool ParseOpLogMode(const std::string& text, OpLogMode* mode, std::string* error);

struct OpLogOptions {
  OpLogMode mode = OpLogMode::kJob;
  OpLogFilesOptions files;
  OpLogFilter filter;
  double sample_rate = 1;        // --op-log-sample
  uint64_t seed = 0;             // --op-log-seed
  int flush_ms = 1000;           // --op-log-flush-ms
  int poll_ms = 20;              // how often the queue is drained
  size_t max_queue = 65536;      // ops waiting for the thread; beyond, dropped and counted
  AnomalyOptions anomaly;
  bool anomaly_log = true;       // --op-log-anomalies
};

struct OpLogCounters {
  uint64_t queued = 0;        // ops the tap queued
  uint64_t queue_dropped = 0;  // ops the tap dropped, the queue being full
  uint64_t written = 0;       // op lines handed to the files
  uint64_t sampled_out = 0;   // ops that passed the filters but not the sample
  uint64_t filtered_out = 0;
  uint64_t anomalies = 0;
  uint64_t file_dropped = 0;  // lines the files dropped (disk cap, unwritable folder)
};

// xtimerd's --op-log-* flags as given (daemon/flags.cc registers them); the numeric defaults are
// OpLogOptions's.
struct OpLogFlags {
  std::string mode = "job";  // --op-log: job, off, jsonl, csv
  std::string sample = "1";  // --op-log-sample
  int64_t seed = static_cast<int64_t>(OpLogOptions().seed);  // --op-log-seed
  std::string kinds;                                         // --op-log-kinds
  std::string ops;                                           // --op-log-ops
  std::string ranks;                                         // --op-log-ranks
  int64_t min_bytes = 0;                                     // --op-log-min-bytes
  int64_t max_bytes = -1;                                    // --op-log-max-bytes (-1: none)
  int64_t rotate_mb = static_cast<int64_t>(OpLogFilesOptions().rotate_bytes >> 20);
  int64_t max_mb = static_cast<int64_t>(OpLogFilesOptions().max_total_bytes >> 20);
  int64_t flush_ms = OpLogOptions().flush_ms;  // --op-log-flush-ms
  std::string anomaly_factor = "3";             // --op-log-anomaly-factor
};

// The options xtimerd's --op-log-* flags ask for, the files under `dump_root`. False with *error
// naming the flag and what it accepts.
bool OpLogOptionsFromFlags(const OpLogFlags& flags, const std::string& dump_root,
                           OpLogOptions* options, std::string* error);

class OpLogWriter {
 public:
  OpLogWriter(Aggregator* aggregator, const OpLogOptions& options,
              std::function<int64_t()> now_ns, const std::string& host);
  ~OpLogWriter();  // Stop()
  OpLogWriter(const OpLogWriter&) = delete;
  OpLogWriter& operator=(const OpLogWriter&) = delete;

  // Installs the tap (unless the mode is kOff) and starts the thread.
  void Start();
  // Removes the tap, writes what is queued and stops the thread.
  void Stop();
  // One pass of the thread: drains the queue into the files (tests call it without Start, with
  // the tap added by AddTap). `final`: also decides every op the anomaly judgment still holds.
  void Drain(bool final = false);
  void AddTap();
  void FlushFiles();
  OpLogCounters counters() const;
  const OpLogFiles& files() const { return files_; }

 private:
  struct Queued {
    uint64_t process;
    int rank_device;
    uint64_t seq;
    format::OpRecord record;
  };
  struct RankInfo {
    bool logged = false;
    OpLogFormat format = OpLogFormat::kNone;
    std::string job;
    uint32_t uid = 0;
    int rank = -1;
    int pid = 0;
  };
  // The op tap: a batch of one process's ops, queued for the writer thread.
  void Tap(uint64_t process, const TapOp* ops, size_t n);
  // Re-reads every rank's identity and log request from an aggregator snapshot.
  void Refresh();
  void Handle(const Queued& q);
  // Frees the batch just handled when a drain needed less than a quarter of it: a burst grows it
  // up to max_queue ops (152 bytes each: 10 MB at the default), and since it swaps with the queue
  // both would keep the burst's pages resident for good. A block that size is unmapped at once
  // (daemon/base/memory_return.h); the next burst grows it again.
  void ReleaseIdleBatch();
  // Queues the anomaly lines of decided_ (the job's ops the detector decided) and clears it.
  void WriteDecisions(const std::string& job);
  void Run();

  Aggregator* const aggregator_;
  const OpLogOptions options_;
  const std::function<int64_t()> now_ns_;
  const std::string anomaly_stream_;  // "anomalies-HOST"
  OpLogFiles files_;
  int tap_id_ = 0;

  // What the tap knows without a lock: slot id % kKnownSlots holds (id << 1) | logged for the
  // processes of the last snapshot (0: none). A process whose slot holds another id takes the
  // locked path (logged_).
  static constexpr size_t kKnownSlots = 4096;
  std::unique_ptr<std::atomic<uint64_t>[]> known_;

  mutable std::mutex mu_;  // the queue and what the tap knows
  std::vector<Queued> queue_;
  std::unordered_map<uint64_t, bool> logged_;  // process id -> asked for a log (tap side)
  uint64_t queued_ = 0, queue_dropped_ = 0;

  // The thread's own state.
  std::vector<Queued> batch_;
  std::unordered_map<RankKey, RankInfo, RankKeyHash> ranks_;  // what the last snapshot said
  std::map<std::string, std::unique_ptr<AnomalyDetector>> detectors_;  // by job
  // RankKey::Packed() (the anomaly detector's member) -> its info when last seen
  std::unordered_map<uint64_t, RankInfo> anomaly_ranks_;
  std::vector<AnomalyDecision> decided_;
  int64_t drain_ns_ = 0;  // now_ns_ at the start of the drain
  struct PendingLines {
    std::string text;
    OpLogFormat format = OpLogFormat::kNone;
    uint32_t uid = 0;
  };
  std::map<std::pair<std::string, std::string>, PendingLines> pending_;  // (job, stream) -> lines
  // Appends the line to the stream's pending text.
  void Queue(const std::pair<std::string, std::string>& key, const RankInfo& info, bool anomaly,
             const OpLogLine& line);
  std::vector<std::string> gone_jobs_;  // no process left in the last snapshot
  OpLogCounters local_;     // the thread's counts, copied into counters_ after each drain
  OpLogCounters counters_;  // guarded by mu_
  int64_t last_flush_ns_ = 0;

  std::mutex run_mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_LOG_WRITER_H_

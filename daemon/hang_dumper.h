// Automatic dumps on a hang verdict (docs/daemon.md "Live diagnosis"). After each live-diagnosis
// pass, a job with a verdict that has not been dumped in its current hang gets, through the
// DumpManager (symlink-safe, daemon/dump_root.h), a history dump of every local rank in
// <dump root>/hang-<UTC YYYYmmddTHHMMSSZ>/<job>/ and hang-summary-<host>.json beside the timeline
// files (the job's HangCheckResponse, proto3 JSON; named after the ranks' host label, with a
// "-2", "-3", ... suffix rather than overwrite, so daemons sharing a dump root never collide).
// Once per hang: a job's hang ends, and the
// next verdict dumps again, when a pass finds no verdict for it (progress resumed). When a dump
// is already running (a user's capture), the automatic one waits for a later pass.
#ifndef XTIMER_DAEMON_HANG_DUMPER_H_
#define XTIMER_DAEMON_HANG_DUMPER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "daemon/diagnosis.h"
#include "daemon/dump_writer.h"

namespace xtimer {
namespace daemon {

// "hang-summary-<host>.json" (the host label sanitized as job labels are, util/job_identity.h),
// or "hang-summary.json" for a node label with nothing left.
std::string HangSummaryName(const std::string& host);

// "hang-20240131T120000Z" for a CLOCK_REALTIME time.
std::string HangDirName(int64_t realtime_ns);

class HangDumper {
 public:
  // `history`: records per rank to write (the aggregator's --history, capped at kMaxDumpHistory).
  HangDumper(DumpManager* dumps, std::string node, int64_t history);

  // Called with each new state (LiveDiagnosis's on_pass): writes the dumps due and sets each
  // job's dump_dir.
  void Update(LiveState* state);

 private:
  struct Hang {
    bool done = false;    // dumped, or failed (logged): not tried again in this hang
    std::string dir;      // the job's folder, when written
  };
  // Writes one job's dump; returns false when the DumpManager is busy (try again later).
  bool Dump(const LiveState& state, const JobLive& job, Hang* hang);
  bool WriteSummary(const std::string& job_dir, const JobLive& job, const std::string& json,
                    std::string* error);

  static constexpr int kMaxSummaryTries = 64;
  DumpManager* dumps_;
  const std::string node_;
  const int64_t history_;
  std::map<std::string, Hang> hangs_;  // by job, while it has a verdict
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_HANG_DUMPER_H_

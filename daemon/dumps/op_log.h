// The per-rank operation log (docs/oplog.md): which operations it keeps (filters by kind,
// operation, rank and size; a deterministic sampling rate) and how one line reads in each format
// (JSON Lines or CSV with a header). Pure functions: the files are daemon/dumps/op_log_files.h, the
// thread that feeds them daemon/dumps/op_log_writer.h.
#ifndef XTIMER_DAEMON_OP_LOG_H_
#define XTIMER_DAEMON_OP_LOG_H_

#include <cstdint>
#include <set>
#include <string>

#include "format/record.h"
#include "format/ring.h"

namespace xtimer {
namespace daemon {

using OpLogFormat = format::OpLogRequest;  // kNone, kJsonl, kCsv
// "jsonl", "csv"; "" for kNone.
const char* OpLogExtension(OpLogFormat f);

// Which operations the op log keeps (the anomaly log judges every operation).
struct OpLogFilter {
  uint32_t kinds = 0;            // bit (1 << OpKind) per kept kind; 0: every kind
  std::set<uint16_t> ops;        // Operation values; empty: every operation
  std::set<int> ranks;           // ranks; empty: every rank (a rank not known yet is -1)
  uint64_t min_bytes = 0;        // ops that move bytes (collectives, p2p, copies, sets): at least
  uint64_t max_bytes = UINT64_MAX;  // ... and at most; other kinds pass
};

// Parses the flags' lists, each comma-separated: kinds by name ("matmul,collective"), operations
// by name ("AllReduce,GemmEx"), ranks as numbers and ranges ("0,4-7"). Empty text: no filter.
// False with *error naming the bad item and what is accepted.
bool ParseKinds(const std::string& text, uint32_t* kinds, std::string* error);
bool ParseOps(const std::string& text, std::set<uint16_t>* ops, std::string* error);
bool ParseRanks(const std::string& text, std::set<int>* ranks, std::string* error);
// A sampling rate in (0, 1] ("0.1", "1").
bool ParseRate(const std::string& text, double* rate, std::string* error);

bool PassesFilter(const OpLogFilter& filter, const format::OpRecord& r, int rank);

// Whether the op numbered `op_seq` of the rank `rank_key` is in the sample: a hash of the three
// (splitmix64) against `rate`, so the same seed keeps the same ops, independent of timing.
bool Sampled(double rate, uint64_t seed, uint64_t rank_key, uint64_t op_seq);

// One line of the op log: the record and where it belongs. Derived numbers (bus bandwidth,
// FLOP/s) come from daemon/model/op_stats.h (opmath), never computed here.
struct OpLogLine {
  const format::OpRecord* record = nullptr;
  int rank = -1;
  int64_t judged_ns = 0;  // anomaly lines only: the part of the duration judged (anomaly.h)
  int64_t median_ns = 0;  // anomaly lines only
  uint64_t samples = 0;   // anomaly lines only: durations the median was taken over
};

// The CSV header line (with '\n') of the op log, or (`anomaly`) of the anomaly log; "" for JSONL.
std::string OpLogHeader(OpLogFormat f, bool anomaly);
// Appends one line (with '\n') to *out. `anomaly`: with judged_ns, median_ns, ratio (judged_ns /
// median_ns) and samples.
void AppendOpLogLine(OpLogFormat f, bool anomaly, const OpLogLine& line, std::string* out);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_LOG_H_

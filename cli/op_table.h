// Per operation signature statistics of a dump, and the comparison of two (`xtimer diff`).
// A signature is what makes two calls the same work: the operation (a kernel's name), its shape
// (GEMM m, n, k, batch) or bytes, its dtype, and for communication the communicator's size.
#ifndef XTIMER_CLI_OP_TABLE_H_
#define XTIMER_CLI_OP_TABLE_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace xtimer {
namespace cli {

struct OpSignature {
  uint8_t kind = 0;  // format::OpKind
  uint16_t op = 0;   // format::Operation
  std::string name;  // the operation's name, or the kernel's
  uint8_t dtype = 0;
  int64_t m = 0, n = 0, k = 0, batch = 0;
  uint64_t bytes = 0;
  int32_t comm_size = 0;
  bool operator<(const OpSignature& o) const {
    return std::tie(kind, op, name, dtype, m, n, k, batch, bytes, comm_size) <
           std::tie(o.kind, o.op, o.name, o.dtype, o.m, o.n, o.k, o.batch, o.bytes, o.comm_size);
  }
  std::string Shape() const;  // "4096x11008x4096", "64 MiB", ""
};

struct OpTable {
  int ranks = 0;  // ranks whose files were read
  uint64_t events = 0;
  // ns, every call. A collective or send/recv call counts its instance's transfer time (the
  // shortest duration among the calls of the collective, or of the send/recv pair: waiting for a
  // late peer is not the operation's own time); a call whose peers were not read, its own.
  std::map<OpSignature, std::vector<int64_t>> durations;
  std::vector<std::string> problems;  // "path: why" for inputs or files (partly) unreadable
};

// Reads every timeline file of `inputs` (timeline/inputs.h); host synchronisations are left out.
// Returns false with *error when no file could be read.
bool ReadOpTable(const std::vector<std::string>& inputs, int jobs, OpTable* table,
                 std::string* error);

struct OpStats {
  uint64_t count = 0;
  double median_s = 0;
  double mean_s = 0;
  double throughput = 0;  // in the row's unit; 0 when the op has none
};

struct DiffRow {
  OpSignature signature;
  const char* unit = "";  // "TFLOPS", "GB/s bus" (collectives, send/recv), "GB/s" (copies, sets)
  OpStats a, b;           // count 0: not in that dump
  // The change in time per rank: (mean_b - mean_a) x count_b / ranks_b; an op only in A counts
  // as -mean_a x count_a / ranks_a (time no longer spent). Means, not medians: a slowdown of one
  // communicator among several of the same signature moves the mean, not the median.
  double impact_s = 0;
};

// Every signature of either table, the largest slowdown first.
std::vector<DiffRow> DiffTables(const OpTable& a, const OpTable& b);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_OP_TABLE_H_

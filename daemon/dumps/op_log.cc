#include "daemon/dumps/op_log.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "daemon/model/op_stats.h"
#include "util/split.h"

namespace xtimer {
namespace daemon {
namespace {

using format::OpKind;

bool ParseInt(const std::string& s, long* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = strtol(s.c_str(), &end, 10);
  return *end == '\0' && *v >= 0 && *v < (1L << 30);
}

bool MovesBytes(uint8_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kCollective:
    case OpKind::kP2P:
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      return true;
    default:
      return false;
  }
}

// The columns, in order; a CSV line and a JSON object carry the same names and values.
constexpr const char* kColumns[] = {
    "start_ns", "rank",  "device",   "kind",  "op",          "comm",
    "seq",      "comm_size", "bytes", "m",    "n",           "k",
    "batch",    "dtype", "duration_ns", "bus_bytes_per_second", "flop_per_second"};
constexpr const char* kAnomalyColumns[] = {"judged_ns", "median_ns", "ratio", "samples"};

}  // namespace

const char* OpLogExtension(OpLogFormat f) {
  switch (f) {
    case OpLogFormat::kJsonl:
      return "jsonl";
    case OpLogFormat::kCsv:
      return "csv";
    default:
      return "";
  }
}

bool ParseKinds(const std::string& text, uint32_t* kinds, std::string* error) {
  *kinds = 0;
  for (const std::string& item : SplitList(text, ',')) {
    uint8_t found = 0;
    for (uint8_t k = 1; k <= format::kOpKindMax; ++k) {
      if (item == format::OpKindName(static_cast<OpKind>(k))) found = k;
    }
    if (found == 0) {
      *error = "unknown kind '" + item +
               "': use matmul, collective, p2p, memcpy, memset, kernel, graph or host_sync";
      return false;
    }
    *kinds |= 1u << found;
  }
  return true;
}

bool ParseOps(const std::string& text, std::set<uint16_t>* ops, std::string* error) {
  ops->clear();
  for (const std::string& item : SplitList(text, ',')) {
    const format::Operation op = format::OperationFromName(item.c_str());
    if (op == format::Operation::kUnknown) {
      *error = "unknown operation '" + item +
               "': use the names of docs/metrics.md's op label (AllReduce, GemmEx, ...)";
      return false;
    }
    ops->insert(static_cast<uint16_t>(op));
  }
  return true;
}

bool ParseRanks(const std::string& text, std::set<int>* ranks, std::string* error) {
  ranks->clear();
  for (const std::string& item : SplitList(text, ',')) {
    const size_t dash = item.find('-');
    long lo = 0, hi = 0;
    const bool ok = dash == std::string::npos
                        ? ParseInt(item, &lo) && ParseInt(item, &hi)
                        : ParseInt(item.substr(0, dash), &lo) &&
                              ParseInt(item.substr(dash + 1), &hi) && lo <= hi &&
                              hi - lo < 65536;
    if (!ok) {
      *error = "bad rank '" + item + "': use numbers and ranges, e.g. 0,4-7";
      return false;
    }
    for (long r = lo; r <= hi; ++r) ranks->insert(static_cast<int>(r));
  }
  return true;
}

bool ParseRate(const std::string& text, double* rate, std::string* error) {
  char* end = nullptr;
  const double v = strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1) {
    *error = "bad sampling rate '" + text + "': use a number in (0, 1], e.g. 0.1";
    return false;
  }
  *rate = v;
  return true;
}

bool PassesFilter(const OpLogFilter& filter, const format::OpRecord& r, int rank) {
  if (filter.kinds != 0 && (r.kind > 31 || (filter.kinds & (1u << r.kind)) == 0)) return false;
  if (!filter.ops.empty() && filter.ops.count(r.op) == 0) return false;
  if (!filter.ranks.empty() && filter.ranks.count(rank) == 0) return false;
  if (MovesBytes(r.kind) && (r.bytes < filter.min_bytes || r.bytes > filter.max_bytes)) {
    return false;
  }
  return true;
}

bool Sampled(double rate, uint64_t seed, uint64_t rank_key, uint64_t op_seq) {
  if (rate >= 1) return true;
  uint64_t z = seed ^ (rank_key * 0x9e3779b97f4a7c15ULL) ^ (op_seq + 0x632be59bd9b4e019ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < rate;
}

std::string OpLogHeader(OpLogFormat f, bool anomaly) {
  if (f != OpLogFormat::kCsv) return "";
  std::string h;
  for (const char* c : kColumns) h += h.empty() ? c : std::string(",") + c;
  if (anomaly) {
    for (const char* c : kAnomalyColumns) h += std::string(",") + c;
  }
  return h + "\n";
}

void AppendOpLogLine(OpLogFormat f, bool anomaly, const OpLogLine& line, std::string* out) {
  const format::OpRecord& r = *line.record;
  const double seconds = static_cast<double>(r.duration_ns) * 1e-9;
  const OpMeasures m = MeasuresOf(r);
  const double busbw = seconds > 0 ? m.bus_bytes / seconds : 0;
  const double flops = seconds > 0 ? m.flop / seconds : 0;
  char comm[format::kCommIdTextSize] = "";
  if (r.comm_id != 0) format::CommIdText(r.comm_id, comm);
  const char* kind = format::OpKindName(static_cast<OpKind>(r.kind));
  const char* op = format::OperationName(static_cast<format::Operation>(r.op));
  const char* dtype = format::DTypeName(static_cast<format::DType>(r.dtype));
  // Every value is a number or a name from a fixed table (no quoting needed in either format).
  const bool json = f == OpLogFormat::kJsonl;
  const char* fmt =
      json ? "{\"start_ns\":%" PRId64 ",\"rank\":%d,\"device\":%d,\"kind\":\"%s\",\"op\":\"%s\","
             "\"comm\":\"%s\",\"seq\":%" PRIu64 ",\"comm_size\":%d,\"bytes\":%" PRIu64
             ",\"m\":%" PRId64 ",\"n\":%" PRId64 ",\"k\":%" PRId64 ",\"batch\":%" PRId64
             ",\"dtype\":\"%s\",\"duration_ns\":%" PRId64
             ",\"bus_bytes_per_second\":%.6g,\"flop_per_second\":%.6g"
           : "%" PRId64 ",%d,%d,%s,%s,%s,%" PRIu64 ",%d,%" PRIu64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%.6g,%.6g";
  char buf[768];
  int n = snprintf(buf, sizeof buf, fmt, r.gpu_start_ns, line.rank, r.device, kind, op, comm,
                   r.seq, r.comm_size, r.bytes, r.m, r.n, r.k, r.batch, dtype, r.duration_ns,
                   busbw, flops);
  out->append(buf, static_cast<size_t>(n));
  if (anomaly) {
    const double ratio =
        line.median_ns > 0 ? static_cast<double>(line.judged_ns) / line.median_ns : 0;
    n = snprintf(buf, sizeof buf,
                 json ? ",\"judged_ns\":%" PRId64 ",\"median_ns\":%" PRId64
                        ",\"ratio\":%.4g,\"samples\":%" PRIu64
                      : ",%" PRId64 ",%" PRId64 ",%.4g,%" PRIu64,
                 line.judged_ns, line.median_ns, ratio, line.samples);
    out->append(buf, static_cast<size_t>(n));
  }
  out->append(json ? "}\n" : "\n");
}

}  // namespace daemon
}  // namespace xtimer

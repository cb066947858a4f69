#include "cli/op_table.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <tuple>
#include <utility>

#include "cli/parallel_for.h"
#include "format/record.h"
#include "opmath/op_math.h"
#include "timeline/inputs.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

using format::OpKind;
using timeline::EventRecord;

using Durations = std::map<OpSignature, std::vector<int64_t>>;

// The calls of one communication instance: a collective (communicator, seq), or a send/recv
// pair (communicator, sender, receiver, seq of the pair), the shortest call's duration, and
// the calls read by signature (a pair's Send and Recv differ).
struct InstanceKey {
  uint64_t comm_id, seq;
  int32_t sender, receiver;  // -1 for a collective
  bool operator<(const InstanceKey& o) const {
    return std::tie(comm_id, seq, sender, receiver) <
           std::tie(o.comm_id, o.seq, o.sender, o.receiver);
  }
};
struct Instance {
  int64_t shortest_ns = INT64_MAX;
  std::vector<std::pair<OpSignature, uint32_t>> calls;  // one or two signatures
};
using Instances = std::map<InstanceKey, Instance>;

void AddCalls(const OpSignature& s, int64_t duration_ns, uint32_t calls, Instance* in) {
  in->shortest_ns = std::min(in->shortest_ns, duration_ns);
  for (auto& c : in->calls) {
    if (!(c.first < s) && !(s < c.first)) {
      c.second += calls;
      return;
    }
  }
  in->calls.emplace_back(s, calls);
}

// The instance `e` belongs to, when it is communication whose peers can be matched.
bool InstanceOf(const EventRecord& e, const std::map<uint64_t, int32_t>& comm_rank,
                InstanceKey* key) {
  if (e.comm_id == 0) return false;
  if (e.kind == static_cast<uint8_t>(OpKind::kCollective)) {
    *key = {e.comm_id, e.seq, -1, -1};
    return true;
  }
  auto me = comm_rank.find(e.comm_id);
  if (e.kind != static_cast<uint8_t>(OpKind::kP2P) || e.peer < 0 || me == comm_rank.end()) {
    return false;
  }
  const bool send = e.op == static_cast<uint16_t>(format::Operation::kSend);
  *key = {e.comm_id, e.seq, send ? me->second : e.peer, send ? e.peer : me->second};
  return true;
}
OpSignature SignatureOf(const EventRecord& e, const timeline::Metadata& m,
                        const std::map<uint64_t, int32_t>& sizes) {
  OpSignature s;
  s.kind = e.kind;
  s.op = e.op;
  s.name = e.name != 0 && e.name < m.strings.size() && !m.strings[e.name].empty()
               ? m.strings[e.name]
               : format::OperationName(static_cast<format::Operation>(e.op));
  s.dtype = e.dtype;
  if (e.kind == static_cast<uint8_t>(OpKind::kMatmul)) {
    s.m = e.m;
    s.n = e.n;
    s.k = e.k;
    s.batch = e.batch;
  } else {
    s.bytes = e.bytes;
  }
  if (e.comm_id != 0) {
    auto it = sizes.find(e.comm_id);
    if (it != sizes.end()) s.comm_size = it->second;
  }
  return s;
}

// One file's durations by signature (collectives by instance); the metadata (names, communicator
// sizes) is only known once the file is read, so events are kept until then.
bool ReadFile(const std::string& path, Durations* out, Instances* collectives, uint64_t* events,
              std::string* problem) {
  std::vector<EventRecord> kept;
  timeline::ReadResult r = timeline::ReadTimeline(path, [&](const EventRecord& e) {
    if (e.kind != static_cast<uint8_t>(OpKind::kHostSync) && e.duration_ns >= 0) kept.push_back(e);
  });
  if (!r.ok) {
    *problem = path + ": " + r.error;
    return false;
  }
  if (!r.complete) *problem = path + ": read " + std::to_string(r.events) + " events, then: " + r.error;
  std::map<uint64_t, int32_t> sizes, comm_rank;
  for (const timeline::CommInfo& c : r.metadata.comms) {
    sizes[c.id] = c.size;
    if (c.rank >= 0) comm_rank[c.id] = c.rank;
  }
  for (const EventRecord& e : kept) {
    const OpSignature s = SignatureOf(e, r.metadata, sizes);
    InstanceKey key;
    if (InstanceOf(e, comm_rank, &key)) {
      AddCalls(s, e.duration_ns, 1, &(*collectives)[key]);
    } else {
      (*out)[s].push_back(e.duration_ns);
    }
  }
  *events = r.events;
  return true;
}

double Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = static_cast<double>(v[mid]);
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m * 1e-9;
}

const char* UnitOf(const OpSignature& s) {
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kMatmul: return "TFLOPS";
    case OpKind::kCollective:
    case OpKind::kP2P: return "GB/s bus";
    case OpKind::kMemcpy:
    case OpKind::kMemset: return "GB/s";
    default: return "";
  }
}

double Throughput(const OpSignature& s, double seconds) {
  if (!(seconds > 0)) return 0;
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kMatmul: return opmath::MatmulFlop(s.m, s.n, s.k, s.batch) / seconds / 1e12;
    case OpKind::kCollective:
    case OpKind::kP2P: return opmath::BusBytes(s.op, s.bytes, s.comm_size) / seconds / 1e9;
    case OpKind::kMemcpy:
    case OpKind::kMemset: return static_cast<double>(s.bytes) / seconds / 1e9;
    default: return 0;
  }
}

OpStats StatsOf(const OpSignature& s, const OpTable& t) {
  OpStats st;
  auto it = t.durations.find(s);
  if (it == t.durations.end()) return st;
  st.count = it->second.size();
  st.median_s = Median(it->second);
  double sum = 0;
  for (int64_t d : it->second) sum += static_cast<double>(d);
  st.mean_s = sum / static_cast<double>(st.count) * 1e-9;
  st.throughput = Throughput(s, st.median_s);
  return st;
}

}  // namespace

std::string OpSignature::Shape() const {
  char b[96];
  if (kind == static_cast<uint8_t>(OpKind::kMatmul)) {
    std::snprintf(b, sizeof(b), "%lldx%lldx%lld", static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k));
    std::string s = b;
    if (batch > 1) s += " x" + std::to_string(batch);
    return s;
  }
  if (bytes == 0) return "";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::snprintf(b, sizeof(b), u == 0 ? "%.0f %s" : "%.4g %s", v, units[u]);
  return b;
}

bool ReadOpTable(const std::vector<std::string>& inputs, int jobs, OpTable* table,
                 std::string* error) {
  timeline::InputList list = timeline::ListTimelineInputs(inputs);
  table->problems = std::move(list.skipped);
  std::mutex mu;
  Instances all_collectives;
  ParallelFor(list.files.size(), jobs, [&](size_t i) {
    Durations d;
    Instances collectives;
    uint64_t events = 0;
    std::string problem;
    const bool ok = ReadFile(list.files[i].path, &d, &collectives, &events, &problem);
    std::lock_guard<std::mutex> lock(mu);
    if (!problem.empty()) table->problems.push_back(problem);
    if (!ok) return;
    ++table->ranks;
    table->events += events;
    for (auto& kv : d) {
      std::vector<int64_t>& all = table->durations[kv.first];
      all.insert(all.end(), kv.second.begin(), kv.second.end());
    }
    for (const auto& kv : collectives) {
      Instance& in = all_collectives[kv.first];
      for (const auto& c : kv.second.calls) {
        AddCalls(c.first, kv.second.shortest_ns, c.second, &in);
      }
    }
  });
  // Communication's time is its transfer: the shortest call's duration in the instance, the last
  // to arrive's, which waited for nobody (clock-free: each duration is on its own GPU's clock).
  // Every call of the instance counts it once.
  for (const auto& kv : all_collectives) {
    for (const auto& c : kv.second.calls) {
      std::vector<int64_t>& all = table->durations[c.first];
      all.insert(all.end(), c.second, kv.second.shortest_ns);
    }
  }
  std::sort(table->problems.begin(), table->problems.end());
  if (table->ranks == 0) {
    *error = "no readable timeline files";
    for (const std::string& p : table->problems) *error += "\n  " + p;
    return false;
  }
  return true;
}

std::vector<DiffRow> DiffTables(const OpTable& a, const OpTable& b) {
  std::vector<DiffRow> rows;
  auto add = [&](const OpSignature& s) {
    DiffRow r;
    r.signature = s;
    r.unit = UnitOf(s);
    r.a = StatsOf(s, a);
    r.b = StatsOf(s, b);
    if (r.b.count > 0) {
      r.impact_s = (r.b.mean_s - r.a.mean_s) * r.b.count / std::max(b.ranks, 1);
    } else {
      r.impact_s = -r.a.mean_s * r.a.count / std::max(a.ranks, 1);
    }
    rows.push_back(std::move(r));
  };
  for (const auto& kv : a.durations) add(kv.first);
  for (const auto& kv : b.durations) {
    if (!a.durations.count(kv.first)) add(kv.first);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& x, const DiffRow& y) { return x.impact_s > y.impact_s; });
  return rows;
}

}  // namespace cli
}  // namespace xtimer

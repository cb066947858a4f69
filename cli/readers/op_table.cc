#include "cli/readers/op_table.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <tuple>
#include <utility>

#include "cli/readers/file_reads.h"
#include "format/record.h"
#include "timeline/clock_align.h"
#include "timeline/flows.h"
#include "timeline/inputs.h"
#include "timeline/timeline_io.h"
#include "util/parallel_for.h"

namespace xtimer {
namespace cli {
namespace {

using Durations = std::map<OpSignature, std::vector<int64_t>>;

// The calls of one collective (communicator, seq): the shortest call's duration, and the calls
// read by signature.
using CollectiveKey = std::pair<uint64_t, uint64_t>;
struct Instance {
  int64_t shortest_ns = INT64_MAX;
  std::vector<std::pair<OpSignature, uint32_t>> calls;
};
using Instances = std::map<CollectiveKey, Instance>;

// One file's sends and receives that can be matched with their other half (timeline/flows.h),
// sorted as P2POps sorts them; the signature and duration of each.
struct FileP2P {
  std::string node;
  std::vector<timeline::P2POp> ops;
  std::vector<std::pair<OpSignature, int64_t>> calls;
};

}  // namespace

struct OpTableFile::Ops {
  timeline::Metadata meta;  // names and communicators
  std::map<uint64_t, int32_t> sizes;  // communicator sizes
  std::vector<timeline::EventRecord> p2p_events;  // held until Finish
  int32_t rank = -1;
  uint64_t events = 0;
  uint64_t comm_calls = 0;
  Durations durations;  // everything but matched communication
  std::map<OpSignature, RankWork> own;
  Instances collectives;
  std::vector<timeline::CollectiveEnd> ends;  // the collectives' end times, for clock alignment
  FileP2P p2p;
};

namespace {

using format::OpKind;
using timeline::CollectiveEnd;
using timeline::EventRecord;
using timeline::P2POp;

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
  if (e.kind == static_cast<uint8_t>(OpKind::kP2P)) {
    s.op = static_cast<uint16_t>(format::Operation::kSend);
    s.name = kTransferName;
  }
  return s;
}

// Sorts `ends` by key and keeps the earliest per key, as MergeEnds wants them.
void SortEnds(std::vector<CollectiveEnd>* ends) {
  std::sort(ends->begin(), ends->end());
  ends->erase(std::unique(ends->begin(), ends->end(),
                          [](const CollectiveEnd& a, const CollectiveEnd& b) {
                            return a.first == b.first;
                          }),
              ends->end());
}

// One event that is not a matched send or receive into `f`.
void Classify(const EventRecord& e, OpTableFile::Ops* f) {
  const OpSignature s = SignatureOf(e, f->meta, f->sizes);
  if (e.kind == static_cast<uint8_t>(OpKind::kCollective) && e.comm_id != 0) {
    AddCalls(s, e.duration_ns, 1, &f->collectives[{e.comm_id, e.seq}]);
    ++f->comm_calls;
    f->ends.push_back({{e.comm_id, e.seq}, e.gpu_start_ns + e.duration_ns});
    return;
  }
  f->durations[s].push_back(e.duration_ns);
  if (e.kind == static_cast<uint8_t>(OpKind::kCollective) ||
      e.kind == static_cast<uint8_t>(OpKind::kP2P)) {
    ++f->comm_calls;
    return;  // communication is its members' together, not one rank's own work
  }
  RankWork& w = f->own[s];
  ++w.count;
  w.total_ns += static_cast<double>(e.duration_ns);
}

// Adds one file's contribution to the table (everything but matched send/recv).
void Merge(OpTableFile::Ops* f, OpTable* table, Instances* collectives,
           std::map<std::string, std::vector<CollectiveEnd>>* node_ends) {
  ++table->ranks;
  table->events += f->events;
  for (auto& kv : f->durations) {
    std::vector<int64_t>& all = table->durations[kv.first];
    all.insert(all.end(), kv.second.begin(), kv.second.end());
  }
  if (f->rank >= 0) {
    table->comm_calls[f->rank] += f->comm_calls;
    for (const auto& kv : f->own) {
      RankWork& w = table->own[f->rank][kv.first];
      w.count += kv.second.count;
      w.total_ns += kv.second.total_ns;
    }
  }
  for (const auto& kv : f->collectives) {
    Instance& in = (*collectives)[kv.first];
    for (const auto& c : kv.second.calls) AddCalls(c.first, kv.second.shortest_ns, c.second, &in);
  }
  timeline::MergeEnds(&(*node_ends)[f->p2p.node], f->ends);
}

// Communication's time is its transfer: the shortest call's duration in the instance, the last
// to arrive's, which waited for nobody (clock-free: each duration is on its own GPU's clock).
// Every call of the instance counts it once.
void AddCollectives(const Instances& collectives, OpTable* table) {
  for (const auto& kv : collectives) {
    for (const auto& c : kv.second.calls) {
      std::vector<int64_t>& all = table->durations[c.first];
      all.insert(all.end(), c.second, kv.second.shortest_ns);
    }
  }
}

// Each node's clock offset, from the collectives the nodes share (timeline/clock_align.h).
std::map<std::string, int64_t> NodeOffsets(std::map<std::string, std::vector<CollectiveEnd>> ends) {
  std::vector<timeline::NodeEnds> nodes;
  for (auto& kv : ends) nodes.push_back({kv.first, std::move(kv.second)});
  const timeline::ClockAlignment alignment = timeline::AlignClocks(nodes);
  std::map<std::string, int64_t> offsets;
  for (size_t i = 0; i < nodes.size(); ++i) offsets[nodes[i].node] = alignment.offset[i];
  return offsets;
}

// A send and its receive are one transfer, paired as `xtimer timeline` pairs them (the n-th send
// of a (communicator, sender, receiver) with its n-th receive, shifted where the files begin at
// different operations): its time is the shorter of the two durations, the later arrival's,
// counted once. A half whose other half was not read counts its own duration.
void AddTransfers(const std::vector<FileP2P>& files,
                  const std::map<std::string, std::vector<CollectiveEnd>>& node_ends,
                  OpTable* table) {
  const std::map<std::string, int64_t> offsets = NodeOffsets(node_ends);
  std::map<timeline::P2PPair, std::vector<int64_t>> sends, receives;
  for (const FileP2P& f : files) {
    const int64_t off = offsets.at(f.node);
    for (const P2POp& op : f.ops) (op.recv ? receives : sends)[op.pair].push_back(op.end + off);
  }
  const timeline::P2PShifts shifts = timeline::MatchP2P(sends, receives);
  std::map<uint64_t, std::pair<OpSignature, int64_t>> transfers;  // by flow id
  for (const FileP2P& f : files) {
    std::vector<bool> numbered(f.ops.size());
    for (const auto& [i, id] : timeline::P2PNumbered(f.ops, shifts)) {
      numbered[i] = true;
      auto it = transfers.emplace(id, f.calls[i]).first;
      it->second.second = std::min(it->second.second, f.calls[i].second);
    }
    for (size_t i = 0; i < f.ops.size(); ++i) {
      if (!numbered[i]) table->durations[f.calls[i].first].push_back(f.calls[i].second);
    }
  }
  for (const auto& kv : transfers) table->durations[kv.second.first].push_back(kv.second.second);
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

OpTableFile::OpTableFile() : ops_(new Ops) {}
OpTableFile::~OpTableFile() = default;

void OpTableFile::Begin(const timeline::Metadata& m, const std::string& dir) {
  ops_->meta = m;
  for (const timeline::CommInfo& c : m.comms) ops_->sizes[c.id] = c.size;
  ops_->rank = m.rank;
  ops_->p2p.node = !m.host.empty() ? m.host : !m.node.empty() ? m.node : dir;
}

void OpTableFile::Add(const EventRecord* events, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const EventRecord& e = events[i];
    if (e.kind == static_cast<uint8_t>(OpKind::kHostSync) || e.duration_ns < 0) continue;
    // Sends and receives are paired once all are read (P2POps looks at no other kind).
    if (e.kind == static_cast<uint8_t>(OpKind::kP2P)) {
      ops_->p2p_events.push_back(e);
    } else {
      Classify(e, ops_.get());
    }
  }
}

void OpTableFile::Finish(uint64_t events_read) {
  Ops* f = ops_.get();
  f->events = events_read;
  std::vector<bool> matched(f->p2p_events.size());
  for (const auto& [i, op] : timeline::P2POps(f->p2p_events, f->meta.comms)) {
    f->p2p.ops.push_back(op);
    f->p2p.calls.emplace_back(SignatureOf(f->p2p_events[i], f->meta, f->sizes),
                              f->p2p_events[i].duration_ns);
    matched[i] = true;
    ++f->comm_calls;
  }
  for (size_t i = 0; i < f->p2p_events.size(); ++i) {
    if (!matched[i]) Classify(f->p2p_events[i], f);
  }
  std::vector<EventRecord>().swap(f->p2p_events);
  f->meta = timeline::Metadata();
  SortEnds(&f->ends);
}

struct OpTableBuilder::State {
  OpTable table;
  Instances collectives;
  std::map<std::string, std::vector<CollectiveEnd>> node_ends;
  std::vector<FileP2P> p2p;
};

OpTableBuilder::OpTableBuilder() : state_(new State) {}
OpTableBuilder::~OpTableBuilder() = default;

void OpTableBuilder::Add(OpTableFile* file) {
  Merge(file->ops_.get(), &state_->table, &state_->collectives, &state_->node_ends);
  state_->p2p.push_back(std::move(file->ops_->p2p));
  file->ops_.reset(new OpTableFile::Ops);
}

bool OpTableBuilder::Finish(OpTable* table, std::string* error) {
  State& s = *state_;
  AddCollectives(s.collectives, &s.table);
  AddTransfers(s.p2p, s.node_ends, &s.table);
  s.table.problems = std::move(table->problems);
  *table = std::move(s.table);
  state_.reset(new State);
  if (table->ranks == 0) {
    *error = "no readable timeline files";
    for (const std::string& p : table->problems) *error += "\n  " + p;
    return false;
  }
  return true;
}

bool ReadOpTable(const std::vector<std::string>& inputs, int jobs, OpTable* table,
                 std::string* error) {
  timeline::InputList list = timeline::ListTimelineInputs(inputs);
  table->problems = std::move(list.skipped);
  std::mutex mu;
  OpTableBuilder builder;
  ParallelFor(list.files.size(), jobs, [&](size_t i) {
    const timeline::InputFile& in = list.files[i];
    OpTableFile f;
    timeline::BlockCallbacks cb;
    cb.on_metadata = [&](const timeline::Metadata& m) { f.Begin(m, in.dir); };
    cb.on_block = [&](const EventRecord* events, size_t count) { f.Add(events, count); };
    const timeline::ReadResult r = ReadFileEvents(in.path, cb);
    if (r.ok) f.Finish(r.events);
    std::lock_guard<std::mutex> lock(mu);
    if (!r.ok) {
      table->problems.push_back(in.path + ": " + r.error);
      return;
    }
    if (!r.complete) {
      table->problems.push_back(in.path + ": read " + std::to_string(r.events) +
                                " events, then: " + r.error);
    }
    builder.Add(&f);
  });
  std::sort(table->problems.begin(), table->problems.end());
  return builder.Finish(table, error);
}

}  // namespace cli
}  // namespace xtimer

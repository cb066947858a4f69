#include "cli/readers/dump_reader.h"

#include <dirent.h>
#include <unistd.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "analysis/host_spans.h"
#include "cli/readers/file_reads.h"
#include "cli/readers/job_inputs.h"
#include "util/parallel_for.h"
#include "cli/readers/rank_clock.h"
#include "cli/readers/rank_progress.h"
#include "format/record.h"
#include "opmath/op_math.h"
#include "proto/hosting.pb.h"
#include "timeline/clock_align.h"
#include "timeline/inputs.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

using timeline::CollectiveEnd;
using timeline::EventRecord;

struct FileResult {
  std::string path;
  std::string dir;
  std::string node;
  bool ok = false;
  std::string error;  // rejected: why; recovered: why reading stopped
  timeline::Metadata meta;
  uint64_t events = 0;
  int64_t end_ns = 0;  // the capture's end (node clock)
  analysis::RankInput input;  // without arrivals (the second pass reads them: dump_replay.h)
  RankReplay replay;
  std::vector<CollectiveEnd> ends;  // its arrivals' ends (node clock), until merged
  std::unique_ptr<OpTableFile> table;  // its part of the op table, until merged
};

std::string Describe(const EventRecord& e, const timeline::Metadata& m) {
  std::string s = e.name != 0 && e.name < m.strings.size() && !m.strings[e.name].empty()
                      ? m.strings[e.name]
                      : format::OperationName(static_cast<format::Operation>(e.op));
  char buf[96];
  if (e.kind == static_cast<uint8_t>(format::OpKind::kMatmul)) {
    std::snprintf(buf, sizeof(buf), " m=%lld n=%lld k=%lld", static_cast<long long>(e.m),
                  static_cast<long long>(e.n), static_cast<long long>(e.k));
    s += buf;
  } else if (e.comm_id != 0) {
    char id[format::kCommIdTextSize];
    std::snprintf(buf, sizeof(buf), " comm %s seq %llu", format::CommIdText(e.comm_id, id),
                  static_cast<unsigned long long>(e.seq));
    s += buf;
  }
  return s;
}

std::string Ago(int64_t ns) {
  char b[48];
  std::snprintf(b, sizeof(b), "%.1f s before the dump", ns * 1e-9);
  return b;
}

// The newest send/receive ends per communicator: the hang threshold of communicators without
// collectives (analysis::RankInput::p2p_completions).
class P2PCadence {
 public:
  void Add(const EventRecord& e) {
    if (e.kind != static_cast<uint8_t>(format::OpKind::kP2P) || e.comm_id == 0 ||
        e.duration_ns < 0) {
      return;
    }
    std::deque<int64_t>& ends = ends_[e.comm_id];
    ends.push_back(e.gpu_start_ns + e.duration_ns);
    if (ends.size() > analysis::kP2PCompletionsKept) ends.pop_front();
  }
  std::vector<analysis::P2PCompletion> Take() {
    std::vector<analysis::P2PCompletion> out;
    for (const auto& c : ends_) {
      for (int64_t end : c.second) out.push_back({c.first, end});
    }
    ends_.clear();
    return out;
  }

 private:
  std::map<uint64_t, std::deque<int64_t>> ends_;
};

// The file's NVTX events as the rank's host spans (what its host was doing: the straggler
// verdict's cause host names them; analysis/host_spans.h).
std::vector<analysis::HostSpan> HostSpansOf(const timeline::Metadata& m) {
  analysis::NvtxSpanBuilder b;
  auto text = [&m](uint32_t i) -> const std::string& {
    static const std::string kNone;
    return i < m.strings.size() ? m.strings[i] : kNone;
  };
  for (const timeline::NvtxEntry& e : m.nvtx) {
    b.Add(e.event, e.range_id, e.start_ns, e.end_ns, e.tid, e.category, text(e.name),
          text(e.domain));
  }
  return b.Take();
}

// An arrival of the file's: its plan, its end for clock alignment.
void AddArrival(const EventRecord& e, int32_t comm_size, FileResult* f) {
  RankReplay& r = f->replay;
  r.plan.Add(e.comm_id, comm_size, e.seq);
  ++r.arrivals;
  const int64_t end = e.gpu_start_ns + e.duration_ns;
  if (end > 0 && e.comm_id != 0) f->ends.push_back({{e.comm_id, e.seq}, end});
  r.first_end_ns = r.first_end_ns == 0 ? end : std::min(r.first_end_ns, end);
  r.last_end_ns = std::max(r.last_end_ns, end);
}

// The first pass over one file: its identity, communicators, send/receive cadence and last
// activity, its arrivals' communicators, seqs and ends (clock alignment), and where its intact
// blocks lie, for the second pass that summarises its ops (dump_replay.h). Nothing of the size of
// the file is held.
// With `summarize`, the rank's ops are also summarised to its arrivals as they are read (a
// window of 8,192 ops), for a reader that holds them all (ReadDump): one pass instead of two.
void ScanOne(FileResult* f, bool summarize, bool op_table) {
  EventRecord last{};
  int64_t last_at = 0;
  P2PCadence p2p;
  RankReplay& replay = f->replay;
  std::unique_ptr<analysis::OrderedRankSummarizer> summarizer;
  if (summarize) summarizer.reset(new analysis::OrderedRankSummarizer());
  std::vector<analysis::TimedOp> block;
  if (op_table) f->table.reset(new OpTableFile());
  timeline::BlockCallbacks cb;
  cb.on_metadata = [&](const timeline::Metadata& m) {
    replay.sizes = CommSizes(m.comms);
    if (f->table) f->table->Begin(m, f->dir);
  };
  cb.on_block_at = [&](uint64_t offset, uint32_t count) {
    replay.blocks.push_back({offset, count});
  };
  cb.on_block = [&](const EventRecord* events, size_t count) {
    const EventRecord* latest = nullptr;  // the block's last activity, copied once
    for (size_t i = 0; i < count; ++i) {
      const EventRecord& e = events[i];
      if (analysis::IsArrival(e.op, e.kind, e.gpu_start_ns, e.duration_ns)) {
        AddArrival(e, replay.sizes.Of(e.comm_id), f);
      }
      p2p.Add(e);
      const int64_t at = std::max(e.gpu_start_ns + std::max<int64_t>(e.duration_ns, 0),
                                  e.cpu_launch_ns);
      if (at >= last_at) {
        last_at = at;
        latest = &e;
      }
      if (summarizer) block.push_back(TimedOpOf(e, replay.sizes.Of(e.comm_id)));
    }
    if (latest != nullptr) last = *latest;
    if (summarizer) summarizer->AddBlock(&block);
    if (f->table) f->table->Add(events, count);
  };
  timeline::ReadResult r = ReadFileEvents(f->path, cb);
  if (summarizer) f->input.arrivals = summarizer->Finish();
  f->ok = r.ok;
  f->error = r.complete ? "" : r.error;
  f->events = r.events;
  f->meta = std::move(r.metadata);
  if (!f->ok) return;
  if (f->table) f->table->Finish(r.events);
  const timeline::Metadata& m = f->meta;
  f->node = !m.host.empty() ? m.host : !m.node.empty() ? m.node : f->dir;
  f->end_ns = m.window_end_ns > 0 ? m.window_end_ns : m.clock_realtime_ns;
  analysis::RankInput& in = f->input;
  for (const timeline::CommInfo& c : m.comms) {
    analysis::Communicator comm;
    comm.id = c.id;
    comm.parent_id = c.parent_id;
    comm.size = c.size;
    comm.rank = c.rank;
    comm.members = c.members;
    in.comms.push_back(std::move(comm));
  }
  in.rank = m.rank;
  in.node = f->node;
  in.marked_step_starts_ns = timeline::MarkedStepStarts(m);
  in.pid = m.pid;
  in.device = m.device;
  in.p2p_completions = p2p.Take();
  in.host_spans = HostSpansOf(m);
  if (last_at > 0) {
    in.last_activity_ns = last_at;
    in.last_activity = Describe(last, m) + " ended " + Ago(f->end_ns - last_at);
  }
  f->meta.strings.clear();
  f->meta.comms.clear();
  f->meta.nvtx.clear();
}

// Whether `f` is the file read for its rank: readable, with a rank, the first such of that rank.
bool Chosen(const FileResult& f, std::set<int32_t>* ranks_seen) {
  return f.ok && f.meta.rank >= 0 && ranks_seen->insert(f.meta.rank).second;
}

// Chooses one file per rank (the first read), reporting rejected, partial and duplicate files.
std::vector<FileResult*> SelectRanks(std::vector<FileResult>* files, DumpInput* out) {
  std::vector<FileResult*> ranks;
  std::map<int32_t, const FileResult*> by_rank;
  for (FileResult& f : *files) {
    if (!f.ok) {
      out->problems.push_back(f.path + ": " + f.error);
      continue;
    }
    if (!f.error.empty()) {
      out->problems.push_back(f.path + ": read " + std::to_string(f.events) +
                              " events, then: " + f.error);
    }
    if (f.meta.rank < 0) {
      out->problems.push_back(f.path + ": the rank is unknown (pid " +
                              std::to_string(f.meta.pid) + "): left out");
      continue;
    }
    auto seen = by_rank.find(f.meta.rank);
    if (seen != by_rank.end()) {
      out->problems.push_back(f.path + ": duplicate rank " + std::to_string(f.meta.rank) +
                              " (already read from " + seen->second->path + ")");
      continue;
    }
    by_rank[f.meta.rank] = &f;
    ranks.push_back(&f);
  }
  return ranks;
}

// The node whose clock a summary's times are on, as the timeline files name it: its ranks' host
// label (a folder may hold several nodes' files and summaries), else the daemon's node, else the
// folder's node.
std::string SummaryNode(const HangCheckResponse& summary, const std::string& dir,
                        const std::map<std::string, int64_t>& offsets,
                        const std::map<std::string, std::string>& node_of_dir) {
  for (const RankProgress& p : summary.ranks()) {
    if (offsets.count(p.host())) return p.host();
  }
  if (offsets.count(summary.node())) return summary.node();
  auto node = node_of_dir.find(dir);
  if (node != node_of_dir.end()) return node->second;
  return !summary.ranks().empty() && !summary.ranks(0).host().empty() ? summary.ranks(0).host()
                                                                       : summary.node();
}

struct Summary {
  std::string dir, path;
  HangCheckResponse answer;
};

// Parses the hang summary `path`; false (a problem reported) when it is not one.
bool ParseSummary(const std::string& path, HangCheckResponse* summary, DumpInput* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::util::JsonParseOptions opt;
  opt.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(text.str(), summary, opt);
  if (!st.ok()) {
    out->problems.push_back(path + ": not a HangCheck answer in JSON (" +
                            std::string(st.message()) + ")");
    return false;
  }
  return true;
}

// The world size of the summaries' entries of `job` (when the files gave none).
int SummaryWorld(const std::vector<Summary>& summaries, const std::string& job) {
  std::vector<int> sizes;
  for (const Summary& s : summaries) {
    for (const RankProgress& p : s.answer.ranks()) {
      if (job.empty() || p.job() == job) sizes.push_back(p.world_size());
    }
  }
  return AgreedWorld(sizes);
}

// Adds the summary's entries of the job read (out->job, out->world) to the ranks it describes.
void ApplySummary(const Summary& s, const std::map<std::string, int64_t>& offsets,
                  const std::map<std::string, std::string>& node_of_dir,
                  std::map<int32_t, analysis::RankInput>* ranks, DumpInput* out) {
  ++out->summaries;
  out->paths.push_back(s.path);
  const double now_s = s.answer.now();
  if (!(now_s >= 0 && now_s * 1e9 < static_cast<double>(timeline::kMaxTimeNs))) {
    out->problems.push_back(s.path + ": now " + std::to_string(now_s) +
                            " s is outside the timeline limits (docs/timeline-format.md): left "
                            "out");
    return;
  }
  const std::string name = SummaryNode(s.answer, s.dir, offsets, node_of_dir);
  auto off = offsets.find(name);
  const int64_t now = static_cast<int64_t>(std::llround(s.answer.now() * 1e9)) +
                      (off != offsets.end() ? off->second : 0);
  out->now_ns = std::max(out->now_ns, now);
  for (const RankProgress& p : s.answer.ranks()) {
    if (p.rank() < 0) continue;
    const std::string rank = "rank " + std::to_string(p.rank());
    if (!out->job.empty() && p.job() != out->job) {
      out->problems.push_back(s.path + ": " + rank + " of job '" + p.job() +
                              "' left out (reading job '" + out->job + "')");
      continue;
    }
    if (out->world > 0 && ((p.world_size() > 0 && p.world_size() != out->world) ||
                           p.rank() >= out->world)) {
      out->problems.push_back(s.path + ": " + rank + " has world size " +
                              std::to_string(p.world_size()) + ", the job " +
                              std::to_string(out->world) + ": left out");
      continue;
    }
    analysis::RankInput& r = (*ranks)[p.rank()];
    if (r.node.empty()) r.node = name;
    ApplyRankProgress(p, now, &r);
  }
}

}  // namespace

std::vector<std::string> HangSummariesIn(const std::string& dir) {
  std::vector<std::string> paths;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return paths;
  const std::string prefix = kHangSummaryPrefix, suffix = kHangSummarySuffix;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() >= prefix.size() + suffix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      paths.push_back(dir + "/" + name);
    }
  }
  closedir(d);
  std::sort(paths.begin(), paths.end());
  return paths;
}

void AddDumpArgs(DumpArgs* args, const char* job_more, CommandLine* cl) {
  cl->Text("--job", &args->job, (JobFlagHelp() + job_more).c_str()).Placeholder("NAME");
  cl->Integer("-j,--jobs", 1, 1024, &args->jobs, "reader threads (default: all hardware threads)");
  cl->SwitchOff("--no-align", &args->align, "do not align node clocks");
  cl->Switch("-q,--quiet", &args->quiet,
             "no progress or input notes on stderr (problems are still printed)");
  cl->Positionals(&args->inputs);
}

DumpReadOptions ReadOptionsOf(const DumpArgs& args) {
  DumpReadOptions ro;
  ro.inputs = args.inputs;
  ro.job = args.job;
  ro.jobs = args.jobs;
  ro.align_clocks = args.align;
  ro.progress = !args.quiet && isatty(STDERR_FILENO) ? stderr : nullptr;
  return ro;
}

namespace {

// The first pass over every file, on opt.jobs threads; as each file and those before it are
// done, the ends of the chosen ones (Chosen) are merged into their node's (when aligning) and
// freed, so that no more than a few files' ends are held at once.
// With opt.op_table, the chosen files' parts of the op table go to *table the same way.
std::map<std::string, std::vector<CollectiveEnd>> ScanFiles(const DumpReadOptions& opt,
                                                            std::vector<FileResult>* files,
                                                            OpTableBuilder* table) {
  std::map<std::string, std::vector<CollectiveEnd>> by_node;
  std::mutex mu;
  std::vector<uint8_t> scanned(files->size(), 0);
  size_t merged = 0, done = 0;
  std::set<int32_t> ranks_seen;
  ParallelFor(files->size(), opt.jobs, [&](size_t i) {
    ScanOne(&(*files)[i], opt.arrivals, opt.op_table);
    std::lock_guard<std::mutex> lock(mu);
    scanned[i] = 1;
    for (; merged < files->size() && scanned[merged]; ++merged) {
      FileResult& f = (*files)[merged];
      if (Chosen(f, &ranks_seen)) {
        std::vector<CollectiveEnd>& node = by_node[f.node];
        if (opt.align_clocks) timeline::MergeEnds(&node, SortedEnds(std::move(f.ends)));
        if (f.table) table->Add(f.table.get());
      }
      std::vector<CollectiveEnd>().swap(f.ends);
      f.table.reset();
    }
    const size_t n = ++done;
    if (opt.progress != nullptr && (n % 16 == 0 || n == files->size())) {
      std::fprintf(opt.progress, "\rreading %zu/%zu files", n, files->size());
      if (n == files->size()) std::fprintf(opt.progress, "\n");
      std::fflush(opt.progress);
    }
  });
  return by_node;
}

}  // namespace

bool OpenDump(const DumpReadOptions& opt, DumpInput* out, DumpReplay* replay,
              std::string* error) {
  JobFiles list;
  if (!SelectJobFiles(opt.inputs, opt.job, opt.jobs, &list, error)) {
    out->wrong_job = true;
    return false;
  }
  out->problems = std::move(list.problems);
  out->notes = std::move(list.notes);
  out->job = list.job;
  out->world = list.world;
  std::vector<FileResult> files(list.files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    files[i].path = list.files[i].path;
    files[i].dir = list.files[i].dir;
  }
  OpTableBuilder table;
  std::map<std::string, std::vector<CollectiveEnd>> by_node = ScanFiles(opt, &files, &table);
  std::string no_table;
  if (opt.op_table) table.Finish(&out->table, &no_table);  // no file read: ranks 0
  std::vector<FileResult*> chosen = SelectRanks(&files, out);
  out->offsets = DomainOffsets(std::move(by_node), opt.align_clocks ? &out->notes : nullptr);
  const std::map<std::string, int64_t> offsets(out->offsets.begin(), out->offsets.end());
  std::map<int32_t, analysis::RankInput> ranks;
  std::map<int32_t, RankReplay> replays;
  std::map<std::string, std::string> node_of_dir;
  for (FileResult* f : chosen) {
    const int64_t offset = offsets.at(f->node);
    ShiftTimes(offset, &f->input);
    node_of_dir.emplace(f->dir, f->node);
    out->now_ns = std::max(out->now_ns, f->end_ns + offset);
    out->events += f->events;
    ++out->files;
    out->paths.push_back(f->path);
    const int32_t rank = f->meta.rank;
    out->metadata.push_back(std::move(f->meta));
    ranks[rank] = std::move(f->input);
    f->replay.path = f->path;
    f->replay.offset_ns = offset;
    replays[rank] = std::move(f->replay);
  }
  files.clear();
  std::vector<Summary> summaries;
  for (const std::string& dir : list.dirs) {
    for (const std::string& path : HangSummariesIn(dir)) {
      Summary sum{dir, path, {}};
      if (ParseSummary(path, &sum.answer, out)) summaries.push_back(std::move(sum));
    }
  }
  if (out->world == 0) out->world = SummaryWorld(summaries, out->job);
  for (const Summary& sum : summaries) ApplySummary(sum, offsets, node_of_dir, &ranks, out);
  if (ranks.empty()) {
    *error = "no readable timeline files or hang summaries";
    for (const std::string& p : out->problems) *error += "\n  " + p;
    return false;
  }
  for (int32_t r = 0; r < out->world; ++r) {
    if (!ranks.count(r)) out->missing.push_back(r);
  }
  out->ranks.reserve(ranks.size());
  replay->jobs = opt.jobs;
  for (auto& r : ranks) {
    auto it = replays.find(r.first);
    if (it != replays.end()) {
      it->second.input = out->ranks.size();
      replay->ranks.push_back(std::move(it->second));
    }
    out->ranks.push_back(std::move(r.second));
  }
  return true;
}

bool ReadDump(const DumpReadOptions& opt, DumpInput* out, std::string* error) {
  DumpReadOptions with_arrivals = opt;
  with_arrivals.arrivals = true;
  DumpReplay replay;
  return OpenDump(with_arrivals, out, &replay, error);
}

}  // namespace cli
}  // namespace xtimer

#include "daemon/dumps/op_log_writer.h"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <utility>

#include "daemon/base/log.h"
#include "daemon/model/live_ops.h"
#include "util/label.h"
#include "util/process_name.h"

namespace xtimer {
namespace daemon {
namespace {

// The stream (file name base) of a rank: its global rank, or its process while the rank is not
// known yet (a rank learned from NCCL later moves on to its rank's file).
// The host in a file name: the job-id rule (util/label.h), "_" when nothing is left.
std::string FileSafe(const std::string& s) {
  const std::string out = SanitizeJobId(s);
  return out.empty() ? "_" : out;
}

std::string StreamOf(int rank, int pid, int rank_device) {
  if (rank < 0) return RanklessName(pid, rank_device);
  char buf[48];
  snprintf(buf, sizeof buf, "rank-%05d", rank);
  return buf;
}

}  // namespace

bool ParseOpLogMode(const std::string& text, OpLogMode* mode, std::string* error) {
  static const std::pair<const char*, OpLogMode> kModes[] = {{"off", OpLogMode::kOff},
                                                              {"job", OpLogMode::kJob},
                                                              {"jsonl", OpLogMode::kJsonl},
                                                              {"csv", OpLogMode::kCsv}};
  for (const auto& m : kModes) {
    if (text == m.first) {
      *mode = m.second;
      return true;
    }
  }
  *error = "bad --op-log '" + text + "': use job (follow each job's XTIMER_LOG), off, jsonl or csv";
  return false;
}

bool OpLogOptionsFromFlags(const OpLogFlags& flags, const std::string& dump_root,
                           OpLogOptions* o, std::string* error) {
  std::string why;
  const auto fail = [&](const char* flag) {
    *error = std::string(flag) + ": " + why;
    return false;
  };
  if (!ParseOpLogMode(flags.mode, &o->mode, &why)) return fail("--op-log");
  if (!ParseRate(flags.sample, &o->sample_rate, &why)) return fail("--op-log-sample");
  if (!ParseKinds(flags.kinds, &o->filter.kinds, &why)) return fail("--op-log-kinds");
  if (!ParseOps(flags.ops, &o->filter.ops, &why)) return fail("--op-log-ops");
  if (!ParseRanks(flags.ranks, &o->filter.ranks, &why)) return fail("--op-log-ranks");
  char* end = nullptr;
  o->anomaly.factor = strtod(flags.anomaly_factor.c_str(), &end);
  if (*end != '\0' || !(o->anomaly.factor > 1) || o->anomaly.factor > 1e6) {
    why = "expected a number above 1, e.g. 3, got '" + flags.anomaly_factor + "'";
    return fail("--op-log-anomaly-factor");
  }
  o->seed = static_cast<uint64_t>(flags.seed);
  o->filter.min_bytes = static_cast<uint64_t>(flags.min_bytes);
  if (flags.max_bytes >= 0) o->filter.max_bytes = static_cast<uint64_t>(flags.max_bytes);
  o->files.root = dump_root;
  o->files.rotate_bytes = static_cast<uint64_t>(flags.rotate_mb) << 20;
  o->files.max_total_bytes = static_cast<uint64_t>(flags.max_mb) << 20;
  o->flush_ms = static_cast<int>(flags.flush_ms);
  return true;
}

OpLogWriter::OpLogWriter(Aggregator* aggregator, const OpLogOptions& options,
                         std::function<int64_t()> now_ns, const std::string& host)
    : aggregator_(aggregator),
      options_(options),
      now_ns_(std::move(now_ns)),
      anomaly_stream_("anomalies-" + FileSafe(host)),
      files_(options.files),
      known_(new std::atomic<uint64_t>[kKnownSlots]) {
  for (size_t i = 0; i < kKnownSlots; ++i) known_[i].store(0, std::memory_order_relaxed);
}

OpLogWriter::~OpLogWriter() { Stop(); }

void OpLogWriter::AddTap() {
  if (options_.mode == OpLogMode::kOff || tap_id_ != 0) return;
  tap_id_ = aggregator_->AddOpTap(
      [this](uint64_t process, const TapOp* ops, size_t n) { Tap(process, ops, n); });
}

void OpLogWriter::Start() {
  if (options_.mode == OpLogMode::kOff) return;
  AddTap();
  thread_ = std::thread([this] { Run(); });
}

void OpLogWriter::Stop() {
  if (tap_id_ != 0) {
    aggregator_->RemoveOpTap(tap_id_);
    tap_id_ = 0;
  }
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OpLogWriter::Tap(uint64_t process, const TapOp* ops, size_t n) {
  const uint64_t known = known_[process % kKnownSlots].load(std::memory_order_relaxed);
  if (known == process << 1) return;  // asked for no log: the common case, no lock
  std::lock_guard<std::mutex> lock(mu_);
  auto it = logged_.find(process);
  if (it != logged_.end() && !it->second) return;  // asked for no log: the common case
  for (size_t i = 0; i < n; ++i) {
    if (queue_.size() >= options_.max_queue) {
      queue_dropped_ += n - i;
      return;
    }
    queue_.push_back({process, ops[i].rank_device, ops[i].seq, *ops[i].op});
    ++queued_;
  }
}

void OpLogWriter::Refresh() {
  const Snapshot snap = aggregator_->TakeSnapshot(now_ns_(), /*with_series=*/false);
  std::unordered_map<uint64_t, bool> logged;
  ranks_.clear();
  for (const ProcessSnapshot& p : snap.processes) {
    RankInfo info;
    info.format = p.op_log;
    if (options_.mode == OpLogMode::kJsonl && info.format == OpLogFormat::kNone) {
      info.format = OpLogFormat::kJsonl;
    } else if (options_.mode == OpLogMode::kCsv && info.format == OpLogFormat::kNone) {
      info.format = OpLogFormat::kCsv;
    }
    info.logged = info.format != OpLogFormat::kNone;
    info.job = p.job;
    info.uid = p.uid;
    info.rank = p.rank;
    info.pid = p.pid;
    logged[p.id] = logged[p.id] || info.logged;
    ranks_[p.key()] = info;
    if (!p.first_rank || p.device < 0) continue;
    ranks_[RankKey{p.id, kWholeProcess}] = info;  // its ops queued while it still had one rank
  }
  for (auto it = detectors_.begin(); it != detectors_.end();) {  // jobs whose ranks all left
    bool present = false;
    for (const ProcessSnapshot& p : snap.processes) present = present || p.job == it->first;
    if (!present) gone_jobs_.push_back(it->first);  // closed after this drain's lines
    ++it;
  }
  for (size_t i = 0; i < kKnownSlots; ++i) known_[i].store(0, std::memory_order_relaxed);
  for (const auto& [id, on] : logged) {
    known_[id % kKnownSlots].store((id << 1) | (on ? 1 : 0), std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(mu_);
  logged_ = std::move(logged);
}

void OpLogWriter::Queue(const std::pair<std::string, std::string>& key, const RankInfo& info,
                        bool anomaly, const OpLogLine& line) {
  PendingLines& p = pending_[key];
  p.format = info.format;
  p.uid = info.uid;
  AppendOpLogLine(info.format, anomaly, line, &p.text);
}

void OpLogWriter::Handle(const Queued& q) {
  auto it = ranks_.find(RankKey{q.process, q.rank_device});
  if (it == ranks_.end() || !it->second.logged) return;
  const RankInfo& info = it->second;
  if (options_.anomaly_log) {
    std::unique_ptr<AnomalyDetector>& d = detectors_[info.job];
    if (d == nullptr) d = std::make_unique<AnomalyDetector>(options_.anomaly);
    const uint64_t member = RankKey{q.process, q.rank_device}.Packed();
    auto known = anomaly_ranks_.try_emplace(member, info).first;  // for its decided ops' lines
    if (known->second.rank != info.rank || known->second.format != info.format) {
      known->second = info;
    }
    d->Add(member, q.record, drain_ns_, &decided_);
    WriteDecisions(info.job);
  }
  OpLogLine line;
  line.record = &q.record;
  line.rank = info.rank;
  if (!PassesFilter(options_.filter, q.record, info.rank)) {
    ++local_.filtered_out;
    return;
  }
  if (!Sampled(options_.sample_rate, options_.seed, RankKey{q.process, q.rank_device}.Packed(),
               q.seq)) {
    ++local_.sampled_out;
    return;
  }
  Queue({info.job, StreamOf(info.rank, info.pid, q.rank_device)}, info, false, line);
  ++local_.written;
}

void OpLogWriter::WriteDecisions(const std::string& job) {
  for (const AnomalyDecision& d : decided_) {
    if (!d.verdict.anomalous) continue;
    auto it = anomaly_ranks_.find(d.member);
    if (it == anomaly_ranks_.end()) continue;
    OpLogLine line;
    line.record = &d.record;
    line.rank = it->second.rank;
    line.median_ns = d.verdict.median_ns;
    line.samples = d.verdict.samples;
    line.judged_ns = d.verdict.judged_ns;
    Queue({job, anomaly_stream_}, it->second, true, line);
    ++local_.anomalies;
  }
  decided_.clear();
}

void OpLogWriter::Drain(bool final) {
  batch_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch_.swap(queue_);
  }
  drain_ns_ = now_ns_();
  bool refreshed = false;
  for (const Queued& q : batch_) {
    if (!refreshed && ranks_.count(RankKey{q.process, q.rank_device}) == 0) {
      Refresh();  // a rank not seen yet: learn it (once per batch)
      refreshed = true;
    }
    Handle(q);
  }
  ReleaseIdleBatch();
  for (auto& [job, d] : detectors_) {  // ops held past the hold time, every one of a gone job
    const bool all = final || std::find(gone_jobs_.begin(), gone_jobs_.end(), job) !=
                                  gone_jobs_.end();
    d->Expire(drain_ns_, all, &decided_);
    WriteDecisions(job);
  }
  for (auto& [key, p] : pending_) {
    if (p.text.empty()) continue;
    files_.Append(key.first, p.uid, key.second, p.format, key.second == anomaly_stream_, p.text);
    p.text.clear();
  }
  for (const std::string& job : gone_jobs_) {
    files_.CloseJob(job);
    detectors_.erase(job);
    for (auto it = pending_.begin(); it != pending_.end();) {
      it = it->first.first == job ? pending_.erase(it) : std::next(it);
    }
    for (auto it = anomaly_ranks_.begin(); it != anomaly_ranks_.end();) {
      it = it->second.job == job ? anomaly_ranks_.erase(it) : std::next(it);
    }
  }
  gone_jobs_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  counters_ = local_;
  counters_.file_dropped = files_.dropped_lines();
}

void OpLogWriter::ReleaseIdleBatch() {
  constexpr size_t kKeepBytes = size_t{64} << 10;
  if (batch_.capacity() * sizeof(Queued) > kKeepBytes && batch_.size() * 4 < batch_.capacity()) {
    std::vector<Queued>().swap(batch_);
  }
}

void OpLogWriter::FlushFiles() { files_.Flush(); }

OpLogCounters OpLogWriter::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  OpLogCounters c = counters_;
  c.queued = queued_;
  c.queue_dropped = queue_dropped_;
  return c;
}

void OpLogWriter::Run() {
  int64_t last_refresh_ns = 0;
  uint64_t reported_drops = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(run_mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms), [this] { return stop_; });
      if (stop_) break;
    }
    const int64_t now = now_ns_();
    if (now - last_refresh_ns >= int64_t{options_.flush_ms} * 1000000) {
      Refresh();  // ranks learned from NCCL, processes gone
      last_refresh_ns = now;
    }
    Drain();
    if (now - last_flush_ns_ >= int64_t{options_.flush_ms} * 1000000) {
      FlushFiles();
      last_flush_ns_ = now;
      const OpLogCounters c = counters();
      if (c.queue_dropped + c.file_dropped > reported_drops) {
        reported_drops = c.queue_dropped + c.file_dropped;
        Logf("op log: %llu ops dropped (queue full: %llu, disk cap or file errors: %llu) %s",
             static_cast<unsigned long long>(reported_drops),
             static_cast<unsigned long long>(c.queue_dropped),
             static_cast<unsigned long long>(c.file_dropped), files_.last_error().c_str());
      }
    }
  }
  Drain(/*final=*/true);
  FlushFiles();
}

}  // namespace daemon
}  // namespace xtimer

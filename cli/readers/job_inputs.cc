#include "cli/readers/job_inputs.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "cli/readers/file_reads.h"
#include "util/parallel_for.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {
namespace {

struct Header {
  bool ok = false;
  std::string job;
  int world = -1;
  int rank = -1;
};

Header ReadHeader(const std::string& path) {
  Header h;
  timeline::ReadResult r = ReadFileMetadata(path);  // no event is read
  if (!r.ok) return h;
  h.ok = true;
  h.job = std::move(r.metadata.job);
  h.world = r.metadata.world_size;
  h.rank = r.metadata.rank;
  return h;
}

struct JobSeen {
  int files = 0;
  std::vector<std::string> dirs;  // in input order, each once
};

std::string JobList(const std::map<std::string, JobSeen>& jobs) {
  std::string s;
  for (const auto& j : jobs) {
    s += "\n  '" + j.first + "': " + std::to_string(j.second.files) +
         (j.second.files == 1 ? " file in " : " files in ");
    for (size_t i = 0; i < j.second.dirs.size() && i < 3; ++i) {
      s += (i ? ", " : "") + j.second.dirs[i];
    }
    if (j.second.dirs.size() > 3) {
      s += " and " + std::to_string(j.second.dirs.size() - 3) + " more folders";
    }
  }
  return s;
}

// The job with the most files (ties: the first by name).
std::string MostFiles(const std::map<std::string, JobSeen>& jobs) {
  auto best = jobs.begin();
  for (auto it = jobs.begin(); it != jobs.end(); ++it) {
    if (it->second.files > best->second.files) best = it;
  }
  return best->first;
}

// Keeps the files of `job` whose world size and rank agree with the job's world size.
void KeepJob(const timeline::InputList& list, const std::vector<Header>& headers,
             const std::string& job, JobFiles* out) {
  std::vector<int> sizes;
  for (size_t i = 0; i < headers.size(); ++i) {
    if (headers[i].ok && headers[i].job == job) sizes.push_back(headers[i].world);
  }
  out->job = job;
  out->world = AgreedWorld(sizes);
  for (size_t i = 0; i < headers.size(); ++i) {
    const Header& h = headers[i];
    if (h.ok && h.job != job) continue;
    if (h.ok && h.world > kMaxWorldSize) {
      out->problems.push_back(list.files[i].path + ": world size " + std::to_string(h.world) +
                              " is over " + std::to_string(kMaxWorldSize) + ": left out");
      ++out->left_out;
      continue;
    }
    if (h.ok && out->world > 0 && h.world > 0 && h.world != out->world) {
      out->problems.push_back(list.files[i].path + ": world size " + std::to_string(h.world) +
                              ", but most files of job '" + job + "' say " +
                              std::to_string(out->world) + ": left out");
      ++out->left_out;
      continue;
    }
    if (h.ok && out->world > 0 && h.rank >= out->world) {
      out->problems.push_back(list.files[i].path + ": rank " + std::to_string(h.rank) +
                              " is not below the world size of job '" + job + "', " +
                              std::to_string(out->world) + ": left out");
      ++out->left_out;
      continue;
    }
    out->files.push_back(list.files[i]);
  }
}

}  // namespace

int AgreedWorld(const std::vector<int>& sizes) {
  std::map<int, int> votes;
  for (int s : sizes) {
    if (s > 0 && s <= kMaxWorldSize) ++votes[s];
  }
  int best = 0, best_votes = 0;
  for (const auto& v : votes) {  // ascending size: a tie keeps the smaller
    if (v.second > best_votes) {
      best = v.first;
      best_votes = v.second;
    }
  }
  return best;
}

std::vector<std::string> PathsOf(const std::vector<timeline::InputFile>& files) {
  std::vector<std::string> paths;
  paths.reserve(files.size());
  for (const timeline::InputFile& f : files) paths.push_back(f.path);
  return paths;
}

std::string JobFlagHelp() {
  return "only this job's files. Jobs (the job label of the files) are never merged: without "
         "--job, the job with the most files is read and the others' files are left out (exit 3)";
}

bool SelectJobFiles(const std::vector<std::string>& inputs, const std::string& job, int threads,
                    JobFiles* out, std::string* error) {
  timeline::InputList list = timeline::ListTimelineInputs(inputs);
  out->problems = std::move(list.skipped);
  out->notes = std::move(list.notes);
  out->dirs = list.dirs;
  std::vector<Header> headers(list.files.size());
  ParallelFor(headers.size(), threads, [&](size_t i) { headers[i] = ReadHeader(list.files[i].path); });
  std::map<std::string, JobSeen> jobs;
  for (size_t i = 0; i < headers.size(); ++i) {
    if (!headers[i].ok) continue;
    JobSeen& seen = jobs[headers[i].job];
    ++seen.files;
    const std::string& dir = list.files[i].dir;
    if (std::find(seen.dirs.begin(), seen.dirs.end(), dir) == seen.dirs.end()) {
      seen.dirs.push_back(dir);
    }
  }
  if (!job.empty() && !jobs.empty() && !jobs.count(job)) {
    *error = "--job '" + job + "' names none of the " + std::to_string(jobs.size()) +
             " job(s) in the inputs:" + JobList(jobs) + "\npass --job with one of them";
    return false;
  }
  std::string chosen = job;
  if (job.empty() && !jobs.empty()) chosen = MostFiles(jobs);
  KeepJob(list, headers, chosen, out);
  if (job.empty() && jobs.size() > 1) {
    std::map<std::string, JobSeen> others = jobs;
    others.erase(chosen);
    int files = 0;
    for (const auto& j : others) files += j.second.files;
    out->left_out += files;
    out->problems.push_back("the inputs hold " + std::to_string(jobs.size()) +
                            " jobs (the job label of the timeline files), never merged: read '" +
                            chosen + "' (most files); left out " + std::to_string(files) +
                            " file(s) of the others, choose one with --job NAME:" +
                            JobList(others));
  }
  return true;
}

}  // namespace cli
}  // namespace xtimer

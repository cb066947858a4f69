#include "cli/readers/stacks_input.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "stacktrace/frame_owner.h"
#include "stacktrace/merge.h"
#include "stacktrace/summary.h"

namespace xtimer {
namespace cli {
namespace {

namespace st = stacktrace;

bool HasSuffix(const std::string& s, const std::string& suffix) {
  const size_t n = suffix.size();
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

constexpr size_t kCulpritsShown = 4;

}  // namespace

void FindFiles(const std::string& dir, int depth, const std::string& suffix,
               std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr || depth > 16) {
    if (d) closedir(d);
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    std::string path = dir + "/" + n;
    struct stat s;
    if (lstat(path.c_str(), &s) != 0) continue;
    if (S_ISDIR(s.st_mode)) FindFiles(path, depth + 1, suffix, out);
    if (S_ISREG(s.st_mode) && HasSuffix(n, suffix)) out->push_back(path);
  }
}

void FindStacks(const std::string& dir, int depth, std::vector<std::string>* out) {
  FindFiles(dir, depth, st::kStacksSuffix, out);
}

bool ReadBoundedFile(const std::string& path, uint64_t max_bytes, std::string* text,
                     std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return *error = std::strerror(errno), false;
  struct stat s;
  if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode) || static_cast<uint64_t>(s.st_size) > max_bytes) {
    close(fd);
    *error = S_ISREG(s.st_mode) ? "larger than " + std::to_string(max_bytes >> 20) + " MiB"
                                : "not a regular file";
    return false;
  }
  text->resize(static_cast<size_t>(s.st_size));  // a reused buffer keeps its capacity
  size_t got = 0;
  while (got < text->size()) {
    ssize_t n = read(fd, &(*text)[got], text->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  text->resize(got);
  return true;
}

bool ReadStacks(const std::string& path, st::StacksFile* out, std::string* error) {
  std::string text;
  return ReadStacks(path, &text, out, error);
}

bool ReadStacks(const std::string& path, std::string* buffer, st::StacksFile* out,
                std::string* error) {
  return ReadBoundedFile(path, st::kMaxFileBytes, buffer, error) &&
         st::ParseStacksJson(*buffer, out, error);
}

void AddCulpritStacks(const std::vector<std::string>& dirs, const std::string& job, int world,
                      analysis::Report* report) {
  if (world <= 0) return;
  std::vector<std::string> paths;
  for (const std::string& d : dirs) FindStacks(d, 0, &paths);
  if (paths.empty()) return;
  std::map<std::string, std::vector<std::string>> by_name;  // file name -> paths
  for (const std::string& p : paths) by_name[BaseName(p)].push_back(p);
  for (analysis::HangVerdict& v : report->hangs) {
    for (size_t i = 0; i < v.culprit_ranks.size() && i < kCulpritsShown; ++i) {
      const int32_t rank = v.culprit_ranks[i];
      auto it = by_name.find(st::StacksFileName(rank, world));
      if (it == by_name.end()) continue;
      for (const std::string& p : it->second) {
        st::StacksFile f;
        std::string error;
        if (!ReadStacks(p, &f, &error) || (!job.empty() && f.job != job)) continue;
        st::FoldXtimer(&f);  // as `xtimer stacks` shows it by default
        st::StackTree tree;
        tree.AddRank(f);
        const std::vector<st::RankGroup> groups = tree.GroupRanks();
        if (groups.empty()) break;
        const std::string top = st::TopFrames(tree, groups.front(), 3);
        v.evidence.push_back("rank " + std::to_string(rank) + "'s stacks: " +
                             (groups.front().frames.empty() ? "" : "in ") + top + " (" +
                             BaseName(p) + ")");
        break;
      }
    }
  }
}

}  // namespace cli
}  // namespace xtimer

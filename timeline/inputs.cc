#include "timeline/inputs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace xtimer {
namespace timeline {
namespace {

std::vector<std::string> TimelineNames(const std::string& dir, std::vector<std::string>* subdirs) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 9 && n.compare(n.size() - 9, 9, ".timeline") == 0) {
      names.push_back(n);
    } else if (n != "." && n != "..") {
      struct stat st;
      if (stat((dir + "/" + n).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) subdirs->push_back(n);
    }
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::sort(subdirs->begin(), subdirs->end());
  return names;
}

void AddDirectory(const std::string& dir, InputList* list) {
  std::vector<std::string> unused;
  for (const std::string& n : TimelineNames(dir, &unused)) list->files.push_back({dir + "/" + n, dir});
  list->dirs.push_back(dir);
}

}  // namespace

InputList ListTimelineInputs(const std::vector<std::string>& inputs) {
  InputList list;
  for (const std::string& in : inputs) {
    struct stat st;
    if (stat(in.c_str(), &st) != 0) {
      list.skipped.push_back(in + ": " + std::strerror(errno));
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      size_t slash = in.rfind('/');
      list.files.push_back({in, slash == std::string::npos ? "." : in.substr(0, slash)});
      continue;
    }
    DIR* d = opendir(in.c_str());
    if (d == nullptr) {
      list.skipped.push_back(in + ": " + std::strerror(errno));
      continue;
    }
    closedir(d);
    std::vector<std::string> subdirs;
    if (!TimelineNames(in, &subdirs).empty()) {
      AddDirectory(in, &list);
      continue;
    }
    std::vector<std::string> jobs;
    for (const std::string& sub : subdirs) {
      std::vector<std::string> unused;
      if (!TimelineNames(in + "/" + sub, &unused).empty()) jobs.push_back(sub);
    }
    if (jobs.empty()) {
      list.skipped.push_back(in + ": no *.timeline files");
      continue;
    }
    std::string names;
    for (const std::string& j : jobs) {
      names += (names.empty() ? "" : ", ") + j;
      AddDirectory(in + "/" + j, &list);
    }
    list.notes.push_back(in + " is a dump path holding job folders; reading " +
                         std::to_string(jobs.size()) + " of them: " + names);
  }
  return list;
}

}  // namespace timeline
}  // namespace xtimer

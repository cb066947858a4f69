#include "cli/readers/crash_input.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "cli/readers/stacks_input.h"
#include "stacktrace/json_reader.h"
#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace cli {
namespace {

namespace st = stacktrace;

constexpr char kCrashJson[] = "crash.json";

std::string Trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string Parent(const std::string& path) {
  const std::string p = Trimmed(path);
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string Base(const std::string& path) {
  const std::string p = Trimmed(path);
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The crash-* folders directly in `root`.
std::vector<std::string> CrashFolders(const std::string& root) {
  std::vector<std::string> out;
  DIR* d = opendir(root.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    struct stat s;
    if (name.compare(0, 6, "crash-") == 0 && lstat((root + "/" + name).c_str(), &s) == 0 &&
        S_ISDIR(s.st_mode)) {
      out.push_back(root + "/" + name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// `ranks`: an array of ranks (0 .. 2^31-1), at most st::kMaxThreads.
bool ParseRanks(const st::JsonValue& doc, std::vector<int32_t>* out, std::string* error) {
  const st::JsonValue* ranks = doc.Find("ranks");
  if (ranks == nullptr || ranks->type != st::JsonValue::kArray) {
    return *error = "\"ranks\" is missing or not an array", false;
  }
  if (ranks->items.size() > static_cast<size_t>(st::kMaxThreads)) {
    return *error = "\"ranks\" has too many entries", false;
  }
  for (const st::JsonValue& r : ranks->items) {
    if (!r.is_integer || r.integer < 0 || r.integer > INT32_MAX) {
      return *error = "\"ranks\" holds a value that is no rank", false;
    }
    out->push_back(static_cast<int32_t>(r.integer));
  }
  return true;
}

}  // namespace

bool ParseCrashJson(const std::string& text, CrashInfo* out, std::string* error) {
  *out = CrashInfo();
  st::JsonValue doc;
  if (!st::ParseJson(text, &doc, error)) return false;
  if (doc.type != st::JsonValue::kObject) return *error = "not a JSON object", false;
  st::JsonFields f(doc, "", error);
  std::string format, frame, app_frame, type, message;
  int64_t version = 0;
  if (!f.Str("format", 64, true, &format)) return false;
  if (format != "xtimer-crash") return f.Fail("format", "is not \"xtimer-crash\"");
  if (!f.Int("version", 1, 1, true, &version) ||
      !f.Str("job", st::kMaxStringBytes, true, &out->job) ||
      !f.Str("host", st::kMaxStringBytes, false, &out->host) ||
      !f.Int("pid", 1, INT32_MAX, true, &out->pid) ||
      !f.Str("frame", st::kMaxStringBytes, true, &frame) ||
      !f.Str("app_frame", st::kMaxStringBytes, false, &app_frame) ||
      !ParseRanks(doc, &out->ranks, error)) {
    return false;
  }
  const st::JsonValue* exception = doc.Find("exception");
  if (exception != nullptr) {
    if (exception->type != st::JsonValue::kObject) {
      return *error = "\"exception\" is not an object", false;
    }
    st::JsonFields e(*exception, "exception: ", error);
    if (!e.Str("type", st::kMaxStringBytes, true, &type) ||
        !e.Str("message", st::kMaxStringBytes, false, &message)) {
      return false;
    }
  }
  out->frame = analysis::CrashFrameText(frame, app_frame, exception != nullptr, type, message);
  return true;
}

std::vector<std::string> FindCrashReports(const std::vector<std::string>& dirs) {
  std::vector<std::string> found;
  std::set<std::string> roots;
  for (const std::string& d : dirs) {
    FindFiles(d, 0, kCrashJson, &found);
    // DIR is a dump folder (hang-X/ or a dump path), or its JOB folder: the root is above it.
    const std::string parent = Parent(d);
    roots.insert(parent);
    if (Base(parent).compare(0, 5, "hang-") == 0) roots.insert(Parent(parent));
  }
  for (const std::string& root : roots) {
    for (const std::string& folder : CrashFolders(root)) FindFiles(folder, 0, kCrashJson, &found);
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<std::string> out;
  for (const std::string& path : found) {
    if (Base(path) == kCrashJson) out.push_back(path);  // the exact name, not *crash.json
  }
  return out;
}

namespace {

// The crash-* folder that holds `path` directly (the daemon's copy) or in its job folder; "".
std::string CrashFolderOf(const std::string& path) {
  for (std::string dir = Parent(path); dir != "/" && dir != "."; dir = Parent(dir)) {
    if (Base(dir).compare(0, 6, "crash-") == 0) return dir;
    if (dir != Parent(path)) break;  // at most one folder (the job's) in between
  }
  return "";
}

// Whether a user other than this one and root could have written `path`: the file or its folder
// belongs to another user, or its folder is writable by group or others. "" when not, else why.
std::string ForeignWritable(const std::string& path) {
  const uid_t me = geteuid();
  for (const std::string& p : {path, Parent(path)}) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) return "";  // read errors are reported by the reader
    if (st.st_uid != 0 && st.st_uid != me) {
      return "uid " + std::to_string(st.st_uid) + " owns " + p;
    }
    if (S_ISDIR(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return p + " is writable by group or others";
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> TrustedCrashReports(const std::vector<std::string>& found,
                                             std::vector<std::string>* problems) {
  // The daemon's own copies (crash-X/crash.json, mode 0600 in its folder) that this user can
  // read stand for their whole crash folder.
  std::set<std::string> daemon_folders;
  for (const std::string& path : found) {
    const std::string folder = CrashFolderOf(path);
    if (!folder.empty() && Parent(path) == folder && access(path.c_str(), R_OK) == 0) {
      daemon_folders.insert(folder);
    }
  }
  std::vector<std::string> out;
  for (const std::string& path : found) {
    const std::string folder = CrashFolderOf(path);
    const bool daemon_copy = !folder.empty() && Parent(path) == folder;
    if (daemon_copy) {
      if (daemon_folders.count(folder) != 0) out.push_back(path);
      continue;  // unreadable to this user: its own job's copy stands in
    }
    if (daemon_folders.count(folder) != 0) continue;  // the daemon's copy is read instead
    const std::string why = ForeignWritable(path);
    if (!why.empty()) {
      problems->push_back("crash report " + path + ": not used as evidence: " + why +
                          " (another user could have written it; the daemon keeps its own copy "
                          "in its crash folder)");
      continue;
    }
    out.push_back(path);
  }
  return out;
}

void AddCrashFrames(const std::vector<std::string>& dirs, std::vector<analysis::RankInput>* ranks,
                    std::vector<std::string>* problems) {
  std::vector<std::string> paths = TrustedCrashReports(FindCrashReports(dirs), problems);
  if (paths.size() > kMaxCrashReportFiles) {
    problems->push_back(std::to_string(paths.size()) + " crash reports beside the dump: only " +
                        "the first " + std::to_string(kMaxCrashReportFiles) + " are read");
    paths.resize(kMaxCrashReportFiles);
  }
  for (const std::string& path : paths) {
    std::string text, error;
    CrashInfo c;
    if (!ReadBoundedFile(path, kMaxCrashJsonBytes, &text, &error) ||
        !ParseCrashJson(text, &c, &error)) {
      problems->push_back("crash report " + path + ": " + error + " (left out)");
      continue;
    }
    for (analysis::RankInput& in : *ranks) {
      // A report with no ranks is of a process without a rank: it names such a process.
      const bool named = c.ranks.empty()
                             ? in.rank < 0
                             : std::find(c.ranks.begin(), c.ranks.end(), in.rank) != c.ranks.end();
      if (in.exit.exited && in.exit.crash_frame.empty() && in.pid == c.pid && named &&
          (in.node.empty() || c.host.empty() || in.node == c.host)) {
        in.exit.crash_frame = c.frame;
      }
    }
  }
}

}  // namespace cli
}  // namespace xtimer

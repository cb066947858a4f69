#include "daemon/dumps/dump_root.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <signal.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/base/owned_dir.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string Why(const std::string& path, int err) {
  if (err == ELOOP || err == ENOTDIR) {
    return path + " is a symlink or not a directory (dump directories are never followed "
                  "through symlinks below the dump root)";
  }
  return path + ": " + strerror(err);
}

// `dir` relative to `root`, or false when it is not under it.
bool RelativeToRoot(const std::string& root, const std::string& dir, std::string* rel) {
  if (dir == root) {
    rel->clear();
    return true;
  }
  const std::string prefix = root == "/" ? root : root + "/";
  if (dir.compare(0, prefix.size(), prefix) != 0) return false;
  *rel = dir.substr(prefix.size());
  return true;
}


// True for NAME.tmp.PID or NAME.tmp.PID.N (timeline/timeline_io.cc's and WriteFileUnderRoot's
// temporary names) with PID no live process.
bool IsDeadTmp(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0) return false;
  std::string digits = name.substr(at + 5);
  const size_t dot = digits.find('.');
  if (dot != std::string::npos) {
    const std::string n = digits.substr(dot + 1);
    if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    digits.resize(dot);
  }
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const pid_t pid = static_cast<pid_t>(std::atoi(digits.c_str()));
  if (pid <= 0) return false;
  // Called before any dump starts: a file with our own pid is a predecessor's (pid reused).
  return pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH);
}

// Cleans the directory `fd` (closed here); true when it is empty afterwards. `in_hang`: it lies
// in an automatic dump's hang-* folder, whose empty directories all go.
bool CleanDir(int fd, int depth, bool in_hang, Leftovers* out) {
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    ++out->errors;
    return false;
  }
  std::vector<std::string> subdirs;
  bool empty = true;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      empty = false;
      continue;
    }
    if (S_ISDIR(st.st_mode) && depth < kMaxLeftoverDepth) {
      subdirs.push_back(name);
    } else if (S_ISREG(st.st_mode) && IsDeadTmp(name)) {
      if (unlinkat(fd, name.c_str(), 0) == 0) {
        ++out->tmp_files;
      } else {
        ++out->errors;
        empty = false;
      }
    } else {
      empty = false;
    }
  }
  for (const std::string& name : subdirs) {
    const int sub = openat(fd, name.c_str(), kDirFlags);
    const int before = out->tmp_files;
    const bool hang = in_hang || name.rfind("hang-", 0) == 0;
    const bool emptied = sub >= 0 && CleanDir(sub, depth + 1, hang, out);
    // A folder is removed when it held only leftovers, or is (in) an automatic dump's and empty.
    if (emptied && (out->tmp_files > before || hang) &&
        unlinkat(fd, name.c_str(), AT_REMOVEDIR) == 0) {
      ++out->empty_dirs;
    } else {
      empty = false;
    }
  }
  closedir(d);
  return empty;
}

}  // namespace

int OpenDirUnderRoot(const std::string& root, const std::string& dir, std::string* error) {
  std::string rel;
  if (!RelativeToRoot(root, dir, &rel)) {
    *error = dir + " is not under the dump root " + root;
    return -1;
  }
  int fd = open(root.c_str(), kDirFlags);
  if (fd < 0) {
    *error = "cannot open the dump root " + Why(root, errno);
    return -1;
  }
  std::string walked = root;
  size_t i = 0;
  while (i < rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    const std::string name = rel.substr(i, j - i);
    i = j + 1;
    if (name.empty()) continue;
    walked += (walked == "/" ? "" : "/") + name;
    if (name == "." || name == "..") {
      *error = walked + ": '.' and '..' are not allowed under the dump root";
      close(fd);
      return -1;
    }
    if (mkdirat(fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + Why(walked, errno);
      close(fd);
      return -1;
    }
    const int next = openat(fd, name.c_str(), kDirFlags);
    const int err = errno;
    close(fd);
    if (next < 0) {
      *error = "cannot open " + Why(walked, err);
      return -1;
    }
    fd = next;
  }
  return fd;
}

bool PrepareDumpRoot(const std::string& root, std::string* resolved, std::string* error) {
  const int fd = OpenOwnedDir({root, "dump root", "--dump-root (XTIMER_DUMP_ROOT)"}, geteuid(),
                              error);
  if (fd < 0) return false;
  close(fd);
  // No component is a symlink (checked above): the normalized path is the real one.
  std::string normal;
  size_t i = 0;
  while (i < root.size()) {
    size_t j = root.find('/', i);
    if (j == std::string::npos) j = root.size();
    const std::string part = root.substr(i, j - i);
    if (!part.empty() && part != ".") normal += "/" + part;
    i = j + 1;
  }
  *resolved = normal.empty() ? "/" : normal;
  return true;
}

Leftovers RemoveDumpLeftovers(const std::string& root) {
  Leftovers out;
  const int fd = open(root.c_str(), kDirFlags);
  if (fd < 0) {
    ++out.errors;
    return out;
  }
  CleanDir(fd, 0, false, &out);
  return out;
}

namespace {

bool InsideRoot(const std::string& root, const std::string& path) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

// The first component of `path` below `root` ("" for the root itself); `path` is inside it.
std::string FirstComponentBelow(const std::string& root, const std::string& path) {
  if (path.size() <= root.size() + 1) return "";
  const std::string rel = path.substr(root.size() + (root == "/" ? 0 : 1));
  return rel.substr(0, rel.find('/'));
}

}  // namespace

bool ResolveDumpPath(const std::string& root, const std::string& path, std::string* resolved,
                     std::string* error) {
  if (path.empty()) {
    *error = "dump_path: required (a directory inside the dump root " + root + ")";
    return false;
  }
  if (path.size() > kMaxPathBytes) {
    *error = "dump_path: longer than " + std::to_string(kMaxPathBytes) + " bytes";
    return false;
  }
  if (path.find('\0') != std::string::npos) {
    *error = "dump_path: contains a NUL byte";
    return false;
  }
  const std::string abs = path[0] == '/' ? path : root + "/" + path;
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < abs.size()) {
    size_t j = abs.find('/', i);
    if (j == std::string::npos) j = abs.size();
    std::string part = abs.substr(i, j - i);
    if (part == "..") {
      *error = "dump_path: '..' components are not allowed (" + path + ")";
      return false;
    }
    if (!part.empty() && part != ".") parts.push_back(part);
    i = j + 1;
  }
  // The deepest existing ancestor, resolved; the rest appended.
  for (size_t keep = parts.size() + 1; keep-- > 0;) {
    std::string prefix = "/";
    for (size_t k = 0; k < keep; ++k) prefix += (k ? "/" : "") + parts[k];
    struct stat st;
    if (stat(prefix.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      *error = "dump_path: cannot examine " + prefix + ": " + strerror(errno);
      return false;
    }
    if (!S_ISDIR(st.st_mode)) {
      *error = "dump_path: " + prefix + " exists and is not a directory";
      return false;
    }
    char real[PATH_MAX];
    if (realpath(prefix.c_str(), real) == nullptr) {
      *error = "dump_path: cannot resolve " + prefix + ": " + strerror(errno);
      return false;
    }
    std::string out = real;
    for (size_t k = keep; k < parts.size(); ++k) out += (out == "/" ? "" : "/") + parts[k];
    if (!InsideRoot(root, out)) {
      *error = "dump_path: " + path + " resolves to " + out + ", outside the dump root " + root +
               " (xtimerd --dump-root / XTIMER_DUMP_ROOT)";
      return false;
    }
    const std::string first = FirstComponentBelow(root, out);
    if (first.rfind("crash-", 0) == 0 || first == "oplog") {
      *error = "dump_path: " + path + " is in " + root + "/" + first +
               ", a folder of the daemon's own (crash-* and oplog hold its crash reports and op "
               "logs): choose another name";
      return false;
    }
    *resolved = out;
    return true;
  }
  *error = "dump_path: cannot resolve " + path;
  return false;
}


}  // namespace daemon
}  // namespace xtimer

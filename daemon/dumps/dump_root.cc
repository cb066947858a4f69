#include "daemon/dumps/dump_root.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
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

}  // namespace daemon
}  // namespace xtimer

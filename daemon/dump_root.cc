#include "daemon/dump_root.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

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

}  // namespace daemon
}  // namespace xtimer

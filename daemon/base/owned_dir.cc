#include "daemon/base/owned_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace xtimer {
namespace daemon {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string Mode(mode_t mode) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Fix(const OwnedDirSpec& spec) {
  return "choose another " + spec.what + " with " + spec.flag;
}

// Why the component `path` (the last one when `last`) may not be trusted, or "".
std::string Distrust(const OwnedDirSpec& spec, const std::string& path, const struct stat& st,
                     uid_t euid, bool last) {
  const std::string owner = "uid " + std::to_string(st.st_uid);
  const std::string me = "the daemon's user, uid " + std::to_string(euid);
  const bool writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (last) {
    if (st.st_uid != euid) {
      return "the " + spec.what + " " + path + " belongs to " + owner + ", not to " + me +
             " (another user may have created it to steer the daemon): remove it (rm -rf " +
             path + ") and start again, or " + Fix(spec);
    }
    if (writable) {
      return "the " + spec.what + " " + path + " is writable by group or others (mode " +
             Mode(st.st_mode) + "): run chmod go-w " + path + ", or " + Fix(spec);
    }
    return "";
  }
  if (st.st_uid != 0 && st.st_uid != euid) {
    return path + ", a parent of the " + spec.what + " " + spec.path + ", belongs to " + owner +
           ": only root or " + me + " may own the directories above it; " + Fix(spec);
  }
  if (writable && (st.st_mode & S_ISVTX) == 0) {
    return path + ", a parent of the " + spec.what + " " + spec.path +
           ", is writable by group or others and not sticky (mode " + Mode(st.st_mode) +
           "): run chmod go-w " + path + " (or chmod +t), or " + Fix(spec);
  }
  return "";
}

bool Split(const OwnedDirSpec& spec, std::vector<std::string>* parts, std::string* error) {
  if (spec.path.empty() || spec.path[0] != '/') {
    *error = "the " + spec.what + " '" + spec.path + "' must be an absolute path (" + spec.flag +
             ")";
    return false;
  }
  size_t i = 0;
  while (i < spec.path.size()) {
    size_t j = spec.path.find('/', i);
    if (j == std::string::npos) j = spec.path.size();
    const std::string part = spec.path.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      *error = "the " + spec.what + " " + spec.path + " has a '..' component: give the path "
               "without it (" + spec.flag + ")";
      return false;
    }
    parts->push_back(part);
  }
  return true;
}

// Opens `name` under `parent` (creating it when missing) without following a symlink.
int OpenStep(const OwnedDirSpec& spec, int parent, const std::string& name,
             const std::string& path, std::string* error) {
  if (mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "cannot create the " + spec.what + " component " + path + ": " + strerror(errno) +
             "; create it, or " + Fix(spec);
    return -1;
  }
  const int fd = openat(parent, name.c_str(), kDirFlags);
  if (fd >= 0) return fd;
  const int err = errno;
  struct stat st;
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    *error = path + " (in the " + spec.what + " " + spec.path + ") is a symlink, which xtimerd "
             "never follows there (it could point anywhere): remove it (rm " + path +
             "), or give the real path with " + spec.flag;
  } else {
    *error = "cannot open " + path + " (in the " + spec.what + " " + spec.path + "): " +
             strerror(err == ELOOP ? ENOTDIR : err) + "; " + Fix(spec);
  }
  return -1;
}

}  // namespace

int OpenOwnedDir(const OwnedDirSpec& spec, uid_t euid, std::string* error) {
  error->clear();
  std::vector<std::string> parts;
  if (!Split(spec, &parts, error)) return -1;
  int fd = open("/", kDirFlags);
  std::string path = "/";
  for (size_t i = 0; fd >= 0 && i <= parts.size(); ++i) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      *error = "cannot examine " + path + ": " + strerror(errno);
      break;
    }
    const std::string why = Distrust(spec, path, st, euid, i == parts.size());
    if (!why.empty()) {
      *error = why;
      break;
    }
    if (i == parts.size()) return fd;
    path += (path == "/" ? "" : "/") + parts[i];
    const int next = OpenStep(spec, fd, parts[i], path, error);
    close(fd);
    fd = next;
  }
  if (fd < 0 && error->empty()) *error = "cannot open /: " + std::string(strerror(errno));
  if (fd >= 0) close(fd);
  return -1;
}

}  // namespace daemon
}  // namespace xtimer

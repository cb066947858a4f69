#include "daemon/model/job_scope.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <sstream>
#include <vector>

#include "util/label.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr size_t kMaxCgroupFile = 64 << 10;  // /proc/PID/cgroup is a few lines

std::string ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out(kMaxCgroupFile, '\0');
  size_t got = 0;
  ssize_t n;
  while (got < out.size() && (n = read(fd, &out[got], out.size() - got)) > 0) got += n;
  close(fd);
  out.resize(got);
  return out;
}

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The pod UID in a kubelet cgroup name: "pod<uid>" (cgroupfs driver) or
// "kubepods-<qos>-pod<uid with _>.slice" (systemd driver). "" when it is none.
std::string PodUid(const std::string& name) {
  std::string uid;
  if (name.compare(0, 3, "pod") == 0) {
    uid = name.substr(3);
  } else {
    const size_t at = name.rfind("-pod");
    const std::string slice = ".slice";
    if (at == std::string::npos || name.size() < slice.size() ||
        name.compare(name.size() - slice.size(), slice.size(), slice) != 0) {
      return "";
    }
    uid = name.substr(at + 4, name.size() - slice.size() - at - 4);
  }
  if (uid.size() != 36) return "";
  for (char& c : uid) {
    if (c == '_') c = '-';
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '-') return "";
  }
  return uid;
}

// The job named by one cgroup path, and the index of its component; -1 when none.
int JobComponent(const std::vector<std::string>& parts, KernelJob* job) {
  bool kubepods = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.compare(0, 4, "job_") == 0 && AllDigits(p.substr(4))) {
      job->kind = KernelJob::Kind::kSlurm;
      job->id = p.substr(4);
      return static_cast<int>(i);
    }
    kubepods |= p.compare(0, 8, "kubepods") == 0;
    const std::string uid = kubepods ? PodUid(p) : "";
    if (!uid.empty()) {
      job->kind = KernelJob::Kind::kPod;
      job->id = uid;
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool RootOwnedDir(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0;
}

// The job of one line "ID:CONTROLLERS:PATH" of /proc/PID/cgroup, checked on the cgroup tree.
KernelJob JobOfLine(const std::string& cgroup_root, const std::string& line) {
  const size_t a = line.find(':');
  const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
  if (b == std::string::npos) return {};
  std::string controllers = line.substr(a + 1, b - a - 1);
  if (controllers.compare(0, 5, "name=") == 0) controllers = controllers.substr(5);
  const std::vector<std::string> parts = Components(line.substr(b + 1));
  KernelJob job;
  const int at = JobComponent(parts, &job);
  if (at < 0) return {};
  std::string dir = cgroup_root;
  if (controllers.empty()) {  // cgroup v2: the unified tree, below "unified" on a hybrid system
    if (RootOwnedDir(cgroup_root + "/unified")) dir += "/unified";
  } else {
    dir += "/" + controllers;
  }
  if (!RootOwnedDir(dir)) return {};
  for (int i = 0; i <= at; ++i) {
    dir += "/" + parts[i];
    if (!RootOwnedDir(dir)) return {};  // a user's delegated subtree names its own directories
  }
  return job;
}

}  // namespace

KernelJob ReadKernelJob(const KernelRoots& roots, int pid) {
  if (pid <= 0) return {};
  std::stringstream in(ReadSmallFile(roots.proc + "/" + std::to_string(pid) + "/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    KernelJob job = JobOfLine(roots.cgroup, line);
    if (job.kind != KernelJob::Kind::kNone) return job;
  }
  return {};
}

std::string JobIdFor(const std::string& label, uint32_t uid, bool privileged,
                     const KernelJob& kernel_job) {
  if (privileged || kernel_job.kind == KernelJob::Kind::kPod) return label;
  if (kernel_job.kind == KernelJob::Kind::kSlurm) {
    const std::string slurm = "slurm-" + kernel_job.id;
    if (label == slurm || label.compare(0, slurm.size() + 1, slurm + ".") == 0) return label;
  }
  return label + "@u" + std::to_string(uid);
}

std::string SanitizeScopedJobId(const std::string& job) {
  const size_t at = job.rfind('@');
  if (at == std::string::npos) return SanitizeJobId(job);
  return SanitizeJobId(job.substr(0, at)) + "@" + SanitizeJobId(job.substr(at + 1));
}

}  // namespace daemon
}  // namespace xtimer

// Whose job a registration's label names (docs/security.md "Job labels and their owners"): the
// job id the daemon keeps for a process, decided once at registration from the label, the
// connection's uid and the kernel's view of the process (its cgroup), never from what the
// process says about itself.
//
// A label stays as given when the registrant is privileged (root or the daemon's own uid), when
// the kernel knows the process's job and the label is bound to it (a Slurm job's cgroup job_N
// and the label slurm-N or slurm-N.STEP, the launcher's Slurm label; any label of a process in a
// Kubernetes pod's cgroup). Otherwise nothing knows the job, and the label is scoped by the
// owner's uid, "LABEL@uUID": each user's job with one label is its own job, so no user's claim
// can block or hide another's. '@' is never part of a label (SanitizeJobId), so a scoped id
// cannot be registered as a plain label.
#ifndef XTIMER_DAEMON_JOB_SCOPE_H_
#define XTIMER_DAEMON_JOB_SCOPE_H_

#include <cstdint>
#include <string>

namespace xtimer {
namespace daemon {

// The job the kernel holds a process in, from its cgroup.
struct KernelJob {
  enum class Kind { kNone, kSlurm, kPod };
  Kind kind = Kind::kNone;
  std::string id;  // the Slurm job id (digits) or the pod UID (with dashes)
};

// Where the kernel's views live (tests point them at a fake tree).
struct KernelRoots {
  std::string proc = "/proc";
  std::string cgroup = "/sys/fs/cgroup";
};

// The job of `pid` from ROOTS.proc/PID/cgroup. A cgroup counts only when every directory from
// its hierarchy's root down to the job's (or pod's) own is a real directory owned by root, so
// a cgroup subtree delegated to a user (systemd's user@UID.service), where the user names
// directories, never passes for a job. kNone when unknown (no pid, unreadable, no such path).
KernelJob ReadKernelJob(const KernelRoots& roots, int pid);

// The job id for a sanitized `label` registered by `uid` (see the top of this file).
std::string JobIdFor(const std::string& label, uint32_t uid, bool privileged,
                     const KernelJob& kernel_job);

// A job id under util/label.h's job-id rule, keeping its uid scope ("train@u1000"): how the
// aggregator keeps and exports a job (whatever its caller passed), and so also a dump or op-log
// folder name.
std::string SanitizeScopedJobId(const std::string& job);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_JOB_SCOPE_H_

// Who may hold a rank's identity (docs/security.md "Peers and identity"): the pure decision the
// Aggregator applies when a process registers and when its ring names a new rank.
//
// A job label belongs to the uid of the processes that hold it (live, or exited and kept for the
// grace period). A registrant of another uid is refused ("identity_owner"), except that a
// privileged one (root or the daemon's own uid) takes a label that only unprivileged uids hold:
// those holders are evicted, so no user can keep a root job's rank from being seen by
// registering first. Within one uid, a rank's labels (job, host, pod, rank, local_rank) belong
// to the live process that holds them with its job token (XTIMER_JOB_TOKEN); a live registrant
// with another token is refused ("identity_token"). With the same token the oldest live process
// wins and later ones are hidden (a restarted rank after its predecessor exited is accepted).
#ifndef XTIMER_DAEMON_IDENTITY_CLAIMS_H_
#define XTIMER_DAEMON_IDENTITY_CLAIMS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xtimer {
namespace daemon {

struct Claim {
  uint64_t id = 0;  // the process
  uint32_t uid = 0;
  std::string token;
  std::string job, host, pod;
  int rank = -1, local_rank = -1;
  bool live = true;
};

struct ClaimDecision {
  const char* refusal = nullptr;  // "identity_owner" or "identity_token"; null: admitted
  std::vector<uint64_t> evict;    // holders of the job that the newcomer takes it from
};

// The decision for `newcomer` against the claims `held` (the newcomer's own id is ignored in
// them). `job_level`: false when only the rank changed (the job label is fixed at registration).
ClaimDecision DecideClaim(const std::vector<Claim>& held, const Claim& newcomer,
                          uint32_t daemon_uid, bool job_level = true);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_IDENTITY_CLAIMS_H_

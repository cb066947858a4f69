#include "daemon/model/identity_claims.h"

namespace xtimer {
namespace daemon {
namespace {

bool Privileged(uint32_t uid, uint32_t daemon_uid) { return uid == 0 || uid == daemon_uid; }

bool SameRank(const Claim& a, const Claim& b) {
  return a.job == b.job && a.host == b.host && a.pod == b.pod && a.rank == b.rank &&
         a.local_rank == b.local_rank;
}

}  // namespace

ClaimDecision DecideClaim(const std::vector<Claim>& held, const Claim& newcomer,
                          uint32_t daemon_uid, bool job_level) {
  ClaimDecision d;
  if (job_level) {
    bool privileged_holder = false;
    for (const Claim& c : held) {
      if (c.id == newcomer.id || c.job != newcomer.job || c.uid == newcomer.uid) continue;
      privileged_holder |= Privileged(c.uid, daemon_uid);
      d.evict.push_back(c.id);
    }
    if (!d.evict.empty() && (privileged_holder || !Privileged(newcomer.uid, daemon_uid))) {
      d.evict.clear();
      d.refusal = "identity_owner";
      return d;
    }
  }
  if (newcomer.rank < 0) return d;
  for (const Claim& c : held) {
    if (c.id == newcomer.id || !c.live || c.uid != newcomer.uid || !SameRank(c, newcomer)) {
      continue;
    }
    if (c.token != newcomer.token) {
      d.evict.clear();
      d.refusal = "identity_token";
      return d;
    }
  }
  return d;
}

}  // namespace daemon
}  // namespace xtimer

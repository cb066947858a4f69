#include "daemon/model/comm_progress.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

void MergeRow(const format::InflightRow& row, format::InflightRow* into) {
  if (row.comm_id == 0) {
    into->last_issued_seq += row.last_issued_seq;
    into->last_completed_seq += row.last_completed_seq;
  } else {
    into->last_issued_seq = std::max(into->last_issued_seq, row.last_issued_seq);
    into->last_completed_seq = std::min(into->last_completed_seq, row.last_completed_seq);
  }
  const bool older = row.oldest_launch_ns > 0 &&
                     (into->oldest_launch_ns == 0 || row.oldest_launch_ns < into->oldest_launch_ns);
  const bool older_collective =
      row.oldest.state != format::InflightState::kNone &&
      (into->oldest.state == format::InflightState::kNone ||
       row.oldest.launch_ns < into->oldest.launch_ns);
  if (older) into->oldest_launch_ns = row.oldest_launch_ns;
  if (older_collective) {
    into->oldest = row.oldest;
    into->device = row.device;
  }
}

CommState* FindOrAddComm(CommTable* comms, uint64_t comm_id, size_t max) {
  auto it = comms->find(comm_id);
  if (it != comms->end()) return &it->second;
  if (comms->size() >= max) {
    auto victim = comms->end();
    for (auto c = comms->begin(); c != comms->end(); ++c) {
      if (c->second.has_row) continue;
      if (victim == comms->end() || c->second.last_activity_ns < victim->second.last_activity_ns) {
        victim = c;
      }
    }
    if (victim == comms->end()) return nullptr;
    comms->erase(victim);
  }
  return &comms->emplace(comm_id, CommState()).first->second;
}

const CommState* NamingComm(const CommTable& comms, uint64_t* id) {
  const CommState* best = nullptr;
  for (const auto& entry : comms) {
    const CommState& c = entry.second;
    if (c.comm_size <= 0 || c.comm_rank < 0) continue;
    const bool better =
        best == nullptr || c.comm_size > best->comm_size ||
        (c.comm_size == best->comm_size &&
         ((c.parent_id == 0) != (best->parent_id == 0) ? c.parent_id == 0 : entry.first < *id));
    if (better) {
      best = &c;
      *id = entry.first;
    }
  }
  return best;
}

}  // namespace daemon
}  // namespace xtimer

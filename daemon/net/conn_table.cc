#include "daemon/net/conn_table.h"

namespace xtimer {
namespace daemon {

ConnTable::ConnTable(size_t max_total, size_t max_per_peer)
    : max_total_(max_total < 1 ? 1 : max_total),
      max_per_peer_(max_per_peer < 1 ? 1 : max_per_peer) {}

std::map<uint64_t, ConnTable::Entry>::iterator ConnTable::Victim(const std::string* peer) {
  auto victim = conns_.end();
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (peer != nullptr && it->second.peer != *peer) continue;
    if (it->second.yield == Yield::kNever) continue;
    if (victim == conns_.end() || it->second.yield < victim->second.yield) victim = it;
    if (victim->second.yield == Yield::kQuietly) break;  // the oldest of the first rank
  }
  return victim;
}

bool ConnTable::MakeRoom(const std::string* peer, const char* cause,
                         std::vector<Eviction>* evict) {
  auto victim = Victim(peer);
  if (victim == conns_.end()) return false;
  evict->push_back(
      Eviction{victim->first, victim->second.yield == Yield::kQuietly ? nullptr : cause});
  Remove(victim->first);
  return true;
}

bool ConnTable::Admit(uint64_t id, const std::string& peer, std::vector<Eviction>* evict) {
  bool ok = true;
  while (ok && peer_count(peer) >= max_per_peer_) ok = MakeRoom(&peer, "peer_limit", evict);
  while (ok && conns_.size() >= max_total_) ok = MakeRoom(nullptr, "connection_limit", evict);
  // Nothing (more) gave way: the new connection is refused; those already chosen are closed all
  // the same (they were the oldest that give way).
  if (!ok) return false;
  conns_.emplace(id, Entry{peer, Yield::kFirst});
  ++per_peer_[peer];
  return true;
}

void ConnTable::SetYield(uint64_t id, Yield yield) {
  auto it = conns_.find(id);
  if (it != conns_.end()) it->second.yield = yield;
}

void ConnTable::Remove(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  auto p = per_peer_.find(it->second.peer);
  if (p != per_peer_.end() && --p->second == 0) per_peer_.erase(p);
  conns_.erase(it);
}

size_t ConnTable::peer_count(const std::string& peer) const {
  auto it = per_peer_.find(peer);
  return it == per_peer_.end() ? 0 : it->second;
}

size_t ConnTable::count(Yield yield) const {
  size_t n = 0;
  for (const auto& c : conns_) n += c.second.yield == yield ? 1 : 0;
  return n;
}

}  // namespace daemon
}  // namespace xtimer

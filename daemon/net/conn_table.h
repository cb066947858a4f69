// A listener's connection caps and who gives way when they are reached (pure bookkeeping, no I/O;
// daemon/net/listener.h is its only user).
//
// Policy (docs/daemon.md, "Listening ports"): a new connection is always admitted. When the
// peer's cap or the global cap would be exceeded, the connection that gives way most readily is
// closed first, the oldest among equals: one already answered (closed quietly, no refusal), else
// one without a complete request (idle, trickling, not yet identified), else one handed on (to
// gRPC) or whose answer is being sent. A connection marked kNever (its request is being answered
// by a worker) never gives way; only when nothing can give way is the new connection refused. So a
// flood of idle or slow connections costs each of them its place, while a legitimate client,
// which sends its request at once, is served.
#ifndef XTIMER_DAEMON_NET_CONN_TABLE_H_
#define XTIMER_DAEMON_NET_CONN_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace xtimer {
namespace daemon {

// How readily a connection gives way, most readily first.
enum class Yield {
  kQuietly,  // answered, only draining: closed without counting a refusal
  kFirst,    // no complete request yet (new connections start here)
  kThen,     // handed on (gRPC) or its answer being sent
  kNever,    // its request is being answered
};

struct Eviction {
  uint64_t id;
  const char* cause;  // "connection_limit", "peer_limit", or null (kQuietly: not a refusal)
};

class ConnTable {
 public:
  ConnTable(size_t max_total, size_t max_per_peer);

  // Admits connection `id` (ids must increase: age order) from `peer` as kFirst. Appends to
  // *evict the connections to close (already removed from the table) so that both caps hold.
  // Returns false (and admits nothing) when no connection can give way.
  bool Admit(uint64_t id, const std::string& peer, std::vector<Eviction>* evict);
  void SetYield(uint64_t id, Yield yield);
  void Remove(uint64_t id);

  size_t size() const { return conns_.size(); }
  size_t peer_count(const std::string& peer) const;
  size_t count(Yield yield) const;

 private:
  struct Entry {
    std::string peer;
    Yield yield;
  };
  // The connection of `peer` (any peer if null) that gives way first, or conns_.end().
  std::map<uint64_t, Entry>::iterator Victim(const std::string* peer);
  bool MakeRoom(const std::string* peer, const char* cause, std::vector<Eviction>* evict);

  size_t max_total_;
  size_t max_per_peer_;
  std::map<uint64_t, Entry> conns_;  // by id: oldest first
  std::unordered_map<std::string, size_t> per_peer_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_NET_CONN_TABLE_H_

// The control port's connection caps and who gives way when they are reached (pure bookkeeping,
// no I/O; ControlServer's event loop is its only user).
//
// Policy (docs/control.md): a new connection is always admitted. When the peer's cap or the
// global cap would be exceeded, the oldest connection that gives way is closed first: the oldest
// *pending* one (accepted, no complete request yet: idle, trickling or still being sniffed), else
// the oldest *gRPC* one (handed to gRPC; idle gRPC connections are closed by gRPC's own idle
// timer anyway). Connections whose HTTP request is being answered never give way. So a flood of
// idle or slow connections costs each of them its place, while a legitimate client, which sends
// its request at once, is served. Only when nothing can give way is the new connection refused.
#ifndef XTIMER_DAEMON_CONN_TABLE_H_
#define XTIMER_DAEMON_CONN_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace xtimer {
namespace daemon {

enum class ConnKind { kPending, kGrpc, kAnswering };

struct Eviction {
  uint64_t id;
  const char* cause;  // "connection_limit" or "peer_limit"
};

class ConnTable {
 public:
  ConnTable(size_t max_total, size_t max_per_peer);

  // Admits connection `id` (ids must increase: age order) from `peer` as kPending. Appends to
  // *evict the connections to close (already removed from the table) so that both caps hold.
  // Returns false (and admits nothing) when no connection can give way.
  bool Admit(uint64_t id, const std::string& peer, std::vector<Eviction>* evict);
  void SetKind(uint64_t id, ConnKind kind);
  void Remove(uint64_t id);

  size_t size() const { return conns_.size(); }
  size_t peer_count(const std::string& peer) const;
  size_t count(ConnKind kind) const;

 private:
  struct Entry {
    std::string peer;
    ConnKind kind;
  };
  // The oldest connection of `peer` (any peer if null) that gives way, or conns_.end().
  std::map<uint64_t, Entry>::iterator Victim(const std::string* peer);
  bool MakeRoom(const std::string* peer, const char* cause, std::vector<Eviction>* evict);

  size_t max_total_;
  size_t max_per_peer_;
  std::map<uint64_t, Entry> conns_;  // by id: oldest first
  std::unordered_map<std::string, size_t> per_peer_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONN_TABLE_H_

// A rank of the daemon's model, in one shape for every part of the daemon (docs/ranks.md): the
// registered process (the aggregator's ProcessId) and the device of its rank. A process is one
// rank, kWholeProcess, until its communicators live on two devices; then each such device is a
// rank of its own, keyed by its CUDA ordinal. Asked for a process's records (Aggregator::History),
// kWholeProcess means all of them, whatever ranks the process has.
//
// kNoDevice is another fact: a record or in-flight row that names no device (format/record.h,
// format/ring.h: -1 for a host sync, or a version 1 ring), and a process with no communicator yet.
#ifndef XTIMER_DAEMON_MODEL_RANK_KEY_H_
#define XTIMER_DAEMON_MODEL_RANK_KEY_H_

#include <cstddef>
#include <cstdint>
#include <functional>

namespace xtimer {
namespace daemon {

// A registered process: ids count registrations from 1 and are never reused; 0 is none (a
// refused registration). Every part of the daemon names a process by this one type.
using ProcessId = uint64_t;

constexpr int kWholeProcess = -1;
constexpr int kNoDevice = -1;

struct RankKey {
  ProcessId process = 0;
  int device = kWholeProcess;

  // One word, for hashing and sampling: the process id's low 48 bits (ids count registrations)
  // and device + 1 in the low 16 (device ordinals are below 65535).
  uint64_t Packed() const { return (process << 16) | static_cast<uint16_t>(device + 1); }

  friend bool operator==(const RankKey& a, const RankKey& b) {
    return a.process == b.process && a.device == b.device;
  }
  friend bool operator!=(const RankKey& a, const RankKey& b) { return !(a == b); }
  friend bool operator<(const RankKey& a, const RankKey& b) {
    return a.process != b.process ? a.process < b.process : a.device < b.device;
  }
};

struct RankKeyHash {
  size_t operator()(const RankKey& k) const { return std::hash<uint64_t>()(k.Packed()); }
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_RANK_KEY_H_

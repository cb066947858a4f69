// One process's NVTX events (format::NvtxRecord, docs/format.md) as the daemon keeps them for
// dumps: the newest `capacity` records in ingest order, and the NVTX strings they refer to
// (reassembled from kNvtxString records like kernel names, daemon/model/kernel_names.h). The
// records grow in chunks, each reserved from the memory budget through `reserve` (a chunk it
// refuses leaves the history at its size, the oldest records then replaced).
// Thread safety: none; the owner's lock guards it.
#ifndef XTIMER_DAEMON_MODEL_NVTX_HISTORY_H_
#define XTIMER_DAEMON_MODEL_NVTX_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "daemon/model/kernel_names.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {

class NvtxHistory {
 public:
  static constexpr size_t kChunk = 1024;  // records added to the storage at a time

  explicit NvtxHistory(size_t capacity) : capacity_(capacity) {}

  // Adds one record; returns the bytes newly charged (0 when no chunk was added).
  size_t Add(const format::NvtxRecord& r, const std::function<bool(size_t)>& reserve);
  // Adds one string part (the kNvtxString record); returns the change of the estimate.
  int64_t AddString(const format::NameRecord& r, size_t max_strings,
                    const std::function<bool(size_t)>& reserve) {
    return strings_.Add(r, max_strings, reserve);
  }

  // The records whose time span meets [begin_ns, end_ns] (a start or an end: its one time), in
  // ingest order.
  std::vector<format::NvtxRecord> Between(int64_t begin_ns, int64_t end_ns) const;
  // The text of string `id`, or null when unknown.
  const std::string* String(uint32_t id) const { return strings_.Find(id); }

  size_t size() const { return records_.size(); }
  uint64_t total() const { return total_; }  // records ever added
  size_t bytes() const { return records_.capacity() * sizeof(format::NvtxRecord); }

 private:
  size_t capacity_;
  std::vector<format::NvtxRecord> records_;  // a ring once full: next_ is the oldest
  size_t next_ = 0;
  bool wrapped_ = false;
  uint64_t total_ = 0;
  KernelNames strings_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_NVTX_HISTORY_H_

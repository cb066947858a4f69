// One process's kernel names, reassembled from the NameRecords that carry them in parts
// (format::NamePart): part 0 starts a name, each next part must follow in order (else the name is
// dropped), the part flagged kNameLast completes it. At most kMaxLength bytes of a name are kept.
// The memory budget stays with the owner (the Aggregator): Add asks it before a name grows the
// table and returns the change of the estimate.
// Thread safety: none; the owner's lock guards it.
#ifndef XTIMER_DAEMON_KERNEL_NAMES_H_
#define XTIMER_DAEMON_KERNEL_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "daemon/base/memory_return.h"
#include "format/record.h"

namespace xtimer {
namespace daemon {

class KernelNames {
 public:
  static constexpr size_t kMaxLength = 4096;

  // Adds one part. When it completes a name, the name is kept if it replaces one or fewer than
  // `max_names` are kept, and `reserve(bytes)` (returning bool) grants what it adds. Returns the
  // change of the estimate (each name is charged its size plus kHashNodeBytes).
  template <typename Reserve>
  int64_t Add(const format::NameRecord& r, size_t max_names, Reserve&& reserve) {
    if (!AddPart(r)) return 0;
    int64_t delta = 0;
    auto old = names_.find(r.name_id);
    const size_t old_bytes = old == names_.end() ? 0 : old->second.size() + kHashNodeBytes;
    const size_t new_bytes = pending_text_.size() + kHashNodeBytes;
    if ((old != names_.end() || names_.size() < max_names) &&
        (new_bytes <= old_bytes || reserve(new_bytes - old_bytes))) {
      names_[r.name_id] = std::move(pending_text_);
      delta = static_cast<int64_t>(new_bytes) - static_cast<int64_t>(old_bytes);
    }
    pending_text_.clear();
    pending_name_ = 0;
    return delta;
  }

  // The name of `name_id`, or null when unknown.
  const std::string* Find(uint32_t name_id) const {
    auto it = names_.find(name_id);
    return it == names_.end() ? nullptr : &it->second;
  }
  size_t size() const { return names_.size(); }

 private:
  // Appends r to the name being assembled; true when r completed it (in pending_text_).
  bool AddPart(const format::NameRecord& r);

  std::unordered_map<uint32_t, std::string> names_;
  uint32_t pending_name_ = 0;
  uint16_t pending_part_ = 0;
  std::string pending_text_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_KERNEL_NAMES_H_

#include "daemon/model/kernel_names.h"

#include <algorithm>

namespace xtimer {
namespace daemon {

bool KernelNames::AddPart(const format::NameRecord& r) {
  if (r.part == 0) {
    pending_name_ = r.name_id;
    pending_text_.clear();
  } else if (r.name_id != pending_name_ || r.part != pending_part_) {
    pending_name_ = 0;  // out of order: drop the name
    return false;
  }
  if (pending_name_ == 0) return false;
  const size_t len = std::min<size_t>(r.length, format::kNameChunk);
  const size_t room = kMaxLength - std::min(kMaxLength, pending_text_.size());
  pending_text_.append(r.text, std::min(len, room));
  pending_part_ = static_cast<uint16_t>(r.part + 1);
  return (r.flags & format::kNameLast) != 0;
}

}  // namespace daemon
}  // namespace xtimer

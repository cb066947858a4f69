#include "daemon/dumps/nvtx_entries.h"

#include <cstring>
#include <unordered_map>

namespace xtimer {
namespace daemon {

void AddNvtxEntries(const std::vector<format::NvtxRecord>& records,
                    const std::map<uint32_t, std::string>& texts, timeline::Metadata* md) {
  std::unordered_map<uint32_t, uint32_t> index;  // NVTX string id -> string table index
  const auto index_of = [&](uint32_t id) -> uint32_t {
    if (id == 0) return 0;
    auto at = index.find(id);
    if (at != index.end()) return at->second;
    auto text = texts.find(id);
    uint32_t i = 0;
    if (text != texts.end()) {
      i = static_cast<uint32_t>(md->strings.size());
      md->strings.push_back(text->second);
    }
    index[id] = i;
    return i;
  };
  md->nvtx.reserve(md->nvtx.size() + records.size());
  for (const format::NvtxRecord& r : records) {
    timeline::NvtxEntry e;
    std::memset(&e, 0, sizeof(e));
    e.event = r.event;
    e.flags = r.flags;
    e.category = r.category <= 0xFFFF ? static_cast<uint16_t>(r.category) : 0;
    e.tid = r.tid;
    e.name = index_of(r.name_id);
    e.domain = index_of(r.domain_id);
    e.start_ns = r.start_ns;
    e.end_ns = r.end_ns;
    e.range_id = r.range_id;
    e.depth = r.depth;
    e.color = r.color;
    md->nvtx.push_back(e);
  }
}

}  // namespace daemon
}  // namespace xtimer

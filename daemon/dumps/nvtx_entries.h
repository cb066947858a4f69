// A process's NVTX events as a timeline file carries them (timeline/format.h kTagNvtx): each
// format::NvtxRecord becomes a timeline::NvtxEntry whose message and domain are indexes into the
// file's string table (appended to it, each text once).
#ifndef XTIMER_DAEMON_DUMPS_NVTX_ENTRIES_H_
#define XTIMER_DAEMON_DUMPS_NVTX_ENTRIES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/record.h"
#include "timeline/timeline_io.h"

namespace xtimer {
namespace daemon {

// Appends `records` to md->nvtx; `texts` maps their NVTX string ids to text (an id it lacks is
// written as no string).
void AddNvtxEntries(const std::vector<format::NvtxRecord>& records,
                    const std::map<uint32_t, std::string>& texts, timeline::Metadata* md);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DUMPS_NVTX_ENTRIES_H_

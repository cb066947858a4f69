#include "cli/readers/file_reads.h"

#include <atomic>

namespace xtimer {
namespace cli {
namespace {

std::atomic<uint64_t> metadata_reads{0};
std::atomic<uint64_t> event_passes{0};

}  // namespace

timeline::ReadResult ReadFileMetadata(const std::string& path) {
  metadata_reads.fetch_add(1, std::memory_order_relaxed);
  return timeline::ReadTimelineMetadata(path);
}

timeline::ReadResult ReadFileEvents(const std::string& path,
                                    const timeline::BlockCallbacks& callbacks) {
  CountEventPass();
  return timeline::ReadTimelineBlocks(path, callbacks);
}

void CountEventPass() { event_passes.fetch_add(1, std::memory_order_relaxed); }

FileReads FileReadsSoFar() {
  FileReads r;
  r.metadata = metadata_reads.load(std::memory_order_relaxed);
  r.event_passes = event_passes.load(std::memory_order_relaxed);
  return r;
}

}  // namespace cli
}  // namespace xtimer

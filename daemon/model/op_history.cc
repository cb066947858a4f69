#include "daemon/model/op_history.h"

#include <utility>

namespace xtimer {
namespace daemon {

OpHistory::Change OpHistory::HalveForBudget() {
  Change change;
  if (chunks_.size() <= 1) return change;
  const size_t drop = chunks_.size() / 2;
  change.shrunk = drop;
  first_ = std::max(first_, (front_chunk_ + drop) * kChunk);
  Trim(/*keep_spare=*/false, &change);
  return change;
}

void OpHistory::Trim(bool keep_spare, Change* change) {
  const uint64_t keep = std::min<uint64_t>(total_, capacity_);
  first_ = std::max(first_, total_ - keep);
  const uint64_t spare = keep_spare ? 1 : 0;
  while (!chunks_.empty() && (front_chunk_ + 1 + spare) * kChunk <= first_) {
    chunks_.pop_front();
    ++front_chunk_;
    ++change->freed;
  }
}

void OpHistory::Rotate(uint64_t chunk) {
  std::unique_ptr<format::OpRecord[]> reused = std::move(chunks_.front());
  chunks_.pop_front();
  ++front_chunk_;
  chunks_.push_back(std::move(reused));
  if (chunks_.size() == 1) front_chunk_ = chunk;
  first_ = std::max(first_, front_chunk_ * kChunk);
}

}  // namespace daemon
}  // namespace xtimer

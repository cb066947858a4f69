#include "hook/comm_registry.h"

#include <algorithm>
#include <vector>

namespace xtimer {
namespace hook {
namespace {

uint64_t Finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

}  // namespace

uint64_t HashBytes(const void* data, size_t size, uint64_t seed) {
  // FNV-1a over the bytes, then a 64-bit finaliser (good avalanche for derived ids).
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return Finalize(h);
}

uint64_t CommIdFromUniqueId(const void* unique_id, size_t size) {
  return HashBytes(unique_id, size, 0);
}

uint64_t CommIdForSplit(uint64_t parent, uint64_t split_counter, int color) {
  uint64_t v[3] = {parent, split_counter, static_cast<uint64_t>(static_cast<int64_t>(color))};
  return HashBytes(v, sizeof(v), 0x53504c4954ULL);  // "SPLIT"
}

uint64_t CommIdForShrink(uint64_t parent, uint64_t shrink_counter, const int* exclude, int count) {
  std::vector<int64_t> v;
  v.push_back(static_cast<int64_t>(parent));
  v.push_back(static_cast<int64_t>(shrink_counter));
  std::vector<int64_t> ex;
  for (int i = 0; i < count && exclude != nullptr; ++i) ex.push_back(exclude[i]);
  std::sort(ex.begin(), ex.end());
  v.insert(v.end(), ex.begin(), ex.end());
  return HashBytes(v.data(), v.size() * sizeof(int64_t), 0x534852494e4bULL);  // "SHRINK"
}

uint64_t CommIdForInitAll(int pid, uint64_t counter) {
  uint64_t v[2] = {static_cast<uint64_t>(pid), counter};
  return HashBytes(v, sizeof(v), 0x494e4954414c4cULL);  // "INITALL"
}

CommEntry* CommRegistry::Insert(const void* comm, uint64_t id, uint64_t parent_id,
                                CommOrigin origin) {
  auto* e = new CommEntry();  // never freed: ops in flight may refer to it
  e->id = id;
  e->parent_id = parent_id;
  e->origin = origin;
  std::lock_guard<std::mutex> lock(mu_);
  unresolved.fetch_add(1);
  size_t i = SlotOf(comm);
  size_t free_slot = kSlots;
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const void* k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == comm) {
      slots_[i].entry.store(e, std::memory_order_release);
      return e;
    }
    if (k == Tombstone() && free_slot == kSlots) free_slot = i;
    if (k == nullptr) {
      if (free_slot == kSlots) free_slot = i;
      break;
    }
  }
  if (free_slot == kSlots) return e;  // table full: the comm is untracked (lookups miss)
  slots_[free_slot].entry.store(e, std::memory_order_release);
  slots_[free_slot].key.store(comm, std::memory_order_release);
  return e;
}

CommEntry* CommRegistry::Lookup(const void* comm) const {
  size_t i = SlotOf(comm);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const void* k = slots_[i].key.load(std::memory_order_acquire);
    if (k == comm) return slots_[i].entry.load(std::memory_order_acquire);
    if (k == nullptr) return nullptr;
  }
  return nullptr;
}

void CommRegistry::Remove(const void* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = SlotOf(comm);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const void* k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == comm) {
      slots_[i].key.store(Tombstone(), std::memory_order_release);
      return;
    }
    if (k == nullptr) return;
  }
}

bool CommRegistry::Resolve(CommEntry* entry, int rank, int size, int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entry->resolved.load(std::memory_order_relaxed)) return false;
  entry->rank = rank;
  entry->size = size;
  entry->device = device;
  entry->peer_seq.reset(new std::atomic<uint64_t>[size > 0 ? size : 1]);
  for (int i = 0; i < (size > 0 ? size : 1); ++i) entry->peer_seq[i].store(0);
  entry->resolved.store(true, std::memory_order_release);
  unresolved.fetch_sub(1);
  return true;
}

}  // namespace hook
}  // namespace xtimer

#include "hook/nvtx_strings.h"

#include <cstdlib>
#include <cstring>

namespace xtimer {
namespace hook {
namespace {

// The length (strnlen: word at a time) and a hash of 8 bytes at a time (multiply and fold).
inline uint64_t HashOf(const char* text, size_t* length) {
  const size_t n = strnlen(text, NvtxStrings::kMaxLength);
  *length = n;
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, text + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, text + i, n - i);
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return h ^ (h >> 29);
}

}  // namespace

NvtxStrings::~NvtxStrings() {
  for (auto& slot : slots_) std::free(const_cast<Entry*>(slot.load(std::memory_order_relaxed)));
}

bool NvtxStrings::Same(const Entry* e, const char* text, size_t length, uint64_t hash) {
  return e->hash == hash && e->length == length && std::memcmp(e->text, text, length) == 0;
}

uint32_t NvtxStrings::Intern(const char* text) {
  if (text == nullptr || text[0] == '\0') return 0;
  size_t length = 0;
  const uint64_t hash = HashOf(text, &length);
  size_t i = hash & (kSlots - 1);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const Entry* e = slots_[i].load(std::memory_order_acquire);
    if (e == nullptr) break;
    if (Same(e, text, length, hash)) return e->id;
  }
  return InternSlow(text, length, hash);
}

uint32_t NvtxStrings::InternSlow(const char* text, size_t length, uint64_t hash) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = hash & (kSlots - 1);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const Entry* e = slots_[i].load(std::memory_order_relaxed);
    if (e != nullptr) {
      if (Same(e, text, length, hash)) return e->id;  // another thread was first
      continue;
    }
    const uint32_t id = count_.load(std::memory_order_relaxed) + 1;
    if (id > kMaxStrings) return 0;
    auto* entry = static_cast<Entry*>(std::malloc(sizeof(Entry) + length));
    if (entry == nullptr) return 0;
    entry->hash = hash;
    entry->id = id;
    entry->length = static_cast<uint32_t>(length);
    std::memcpy(entry->text, text, length);
    entry->text[length] = '\0';
    by_id_[id].store(entry, std::memory_order_release);
    slots_[i].store(entry, std::memory_order_release);
    count_.store(id, std::memory_order_release);
    return id;
  }
  return 0;
}

std::string NvtxStrings::Text(uint32_t id) const {
  if (id == 0 || id > kMaxStrings) return "";
  const Entry* e = by_id_[id].load(std::memory_order_acquire);
  return e == nullptr ? "" : std::string(e->text, e->length);
}

}  // namespace hook
}  // namespace xtimer

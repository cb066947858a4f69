// A table that owns objects by a 64-bit key, for lookups on the ingest path: open addressing
// (linear probing, a power-of-two size, at most three quarters full) over owning slots. Finding
// a key costs a multiply, a shift and usually one or two probes: no division and no node to
// chase, which std::unordered_map costs on every op record. Objects are never removed (they live
// as long as the table), so their addresses stay valid and the table needs no tombstones; one
// array is all it allocates.
// Thread safety: none; the owner's lock guards it.
#ifndef XTIMER_DAEMON_MODEL_KEYED_TABLE_H_
#define XTIMER_DAEMON_MODEL_KEYED_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace xtimer {
namespace daemon {

template <typename T>
class KeyedTable {
 public:
  struct Slot {
    uint64_t key = 0;
    std::unique_ptr<T> item;  // null: empty
  };

  // The most heap memory one object costs the table beyond the object itself: the array doubles
  // once it is three quarters full, so it holds at most 8/3 slots per object.
  static constexpr size_t kMaxBytesPerItem = 3 * sizeof(Slot);

  // The object of `key`, or null.
  T* Find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = SlotOf(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.item == nullptr) return nullptr;
      if (s.key == key) return s.item.get();
    }
  }

  // Adds `item` under `key`, which must not be in the table yet; returns the object.
  T* Add(uint64_t key, std::unique_ptr<T> item) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    T* raw = item.get();
    Place(key, std::move(item));
    ++size_;
    return raw;
  }

  size_t size() const { return size_; }

  // Calls visit(key, const T&) for every object, in no particular order.
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (const Slot& s : slots_) {
      if (s.item != nullptr) visit(s.key, *s.item);
    }
  }

 private:
  size_t SlotOf(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void Place(uint64_t key, std::unique_ptr<T> item) {
    size_t i = SlotOf(key);
    while (slots_[i].item != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = Slot{key, std::move(item)};
  }

  void Grow() {
    const size_t size = slots_.empty() ? 16 : slots_.size() * 2;
    int bits = 0;
    while ((size_t{1} << bits) < size) ++bits;
    std::vector<Slot> old(size);
    old.swap(slots_);
    shift_ = 64 - bits;
    for (Slot& s : old) {
      if (s.item != nullptr) Place(s.key, std::move(s.item));
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  int shift_ = 63;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_KEYED_TABLE_H_

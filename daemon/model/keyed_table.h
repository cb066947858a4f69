// A table that owns objects by a 64-bit key, for lookups on the ingest path: an open-addressing
// index (linear probing, a power-of-two size, at most half full) over the owned objects. Finding a
// key costs a multiply, a shift and usually one probe: no division and no node to chase, which
// std::unordered_map costs on every op record. Objects are never removed (they live as long as the
// table), so their addresses stay valid and the index needs no tombstones.
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
  // The most heap memory one object costs the table beyond the object itself: its owner slot,
  // and index slots (the index doubles at half full, so it holds at most 4 slots per object).
  static constexpr size_t kMaxBytesPerItem =
      sizeof(std::pair<uint64_t, std::unique_ptr<T>>) + 4 * 2 * sizeof(uint64_t);

  // The object of `key`, or null.
  T* Find(uint64_t key) const {
    if (index_.empty()) return nullptr;
    for (size_t i = SlotOf(key);; i = (i + 1) & (index_.size() - 1)) {
      const Slot& s = index_[i];
      if (s.item == nullptr) return nullptr;
      if (s.key == key) return s.item;
    }
  }

  // Adds `item` under `key`, which must not be in the table yet; returns the object.
  T* Add(uint64_t key, std::unique_ptr<T> item) {
    if ((items_.size() + 1) * 2 > index_.size()) Grow();
    T* raw = item.get();
    items_.emplace_back(key, std::move(item));
    Place(key, raw);
    return raw;
  }

  size_t size() const { return items_.size(); }
  // The keys and objects in the order they were added.
  const std::vector<std::pair<uint64_t, std::unique_ptr<T>>>& items() const { return items_; }

 private:
  struct Slot {
    uint64_t key = 0;
    T* item = nullptr;  // null: empty
  };

  size_t SlotOf(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void Place(uint64_t key, T* item) {
    size_t i = SlotOf(key);
    while (index_[i].item != nullptr) i = (i + 1) & (index_.size() - 1);
    index_[i] = Slot{key, item};
  }

  void Grow() {
    const size_t size = index_.empty() ? 16 : index_.size() * 2;
    int bits = 0;
    while ((size_t{1} << bits) < size) ++bits;
    index_.assign(size, Slot());
    shift_ = 64 - bits;
    for (const auto& it : items_) Place(it.first, it.second.get());
  }

  std::vector<std::pair<uint64_t, std::unique_ptr<T>>> items_;
  std::vector<Slot> index_;
  int shift_ = 63;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_MODEL_KEYED_TABLE_H_

// The NVTX strings of a process (messages, domain names, registered strings), interned by
// content: each distinct string gets an id (1, 2, ... up to kMaxStrings) that NVTX records carry
// (format::NvtxRecord), and the poller sends each string once (format::RecordType::kNvtxString).
//
// Intern is lock-free once a string was seen: it hashes the text and probes an open-addressing
// table of published entries (no allocation, no lock, no system call). The first sight of a
// string takes a mutex and allocates its entry (cold). Entries live as long as the table.
// Thread safety: Intern and Text from any thread.
#ifndef XTIMER_HOOK_NVTX_STRINGS_H_
#define XTIMER_HOOK_NVTX_STRINGS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace xtimer {
namespace hook {

class NvtxStrings {
 public:
  static constexpr size_t kSlots = 8192;
  // Distinct strings per process: a string beyond them gets id 0 (unnamed), so the daemon's and
  // the trace's tables stay bounded.
  static constexpr uint32_t kMaxStrings = 4096;
  // Bytes of a string that are kept (a longer one is cut, and interned as cut).
  static constexpr size_t kMaxLength = 1024;

  NvtxStrings() = default;
  ~NvtxStrings();
  NvtxStrings(const NvtxStrings&) = delete;
  NvtxStrings& operator=(const NvtxStrings&) = delete;

  // The id of `text` (NUL-terminated; null and "" are id 0), interning it on first sight.
  uint32_t Intern(const char* text);
  // The text of `id`, or "" when unknown. Cold (the poller, once per id).
  std::string Text(uint32_t id) const;
  uint32_t size() const { return count_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t id;
    uint32_t length;
    char text[1];  // `length` bytes and a NUL (allocated to fit)
  };
  uint32_t InternSlow(const char* text, size_t length, uint64_t hash);
  static bool Same(const Entry* e, const char* text, size_t length, uint64_t hash);

  std::atomic<const Entry*> slots_[kSlots] = {};
  std::atomic<const Entry*> by_id_[kMaxStrings + 1] = {};
  std::atomic<uint32_t> count_{0};
  std::mutex mu_;  // first sights
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_NVTX_STRINGS_H_

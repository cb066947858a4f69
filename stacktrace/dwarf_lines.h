// Source file and line of an address from a file's DWARF line table, read with elfutils' libdw
// (docs/stacks.md "Symbolization"). The symbolizer's own bounded ELF reader names functions;
// this only maps a link-time address to file:line where the file carries .debug_line.
//
// The file is hostile input: it is opened from an fd the caller checked (never a path), every
// .debug_* section is counted (decompressed size for SHF_COMPRESSED ones) and the file refused
// when they exceed a bound, before libdw reads any of them; libdw reads all of them into memory
// when it opens the file, after which the fd is released (later reads fail, they never touch a
// file that may have changed). Bad DWARF gives no line, never a crash.
#ifndef XTIMER_STACKTRACE_DWARF_LINES_H_
#define XTIMER_STACKTRACE_DWARF_LINES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

struct Dwarf;
struct Elf;

namespace xtimer {
namespace stacktrace {

class DwarfLines {
 public:
  // The line tables of the ELF file open on `fd` (the fd stays the caller's; it is not used
  // after Open returns). nullptr with *error "" when the file has no .debug_line; nullptr with
  // *error saying why when its DWARF is refused (over `max_debug_bytes`, unreadable).
  static std::unique_ptr<DwarfLines> Open(int fd, uint64_t max_debug_bytes, std::string* error);
  ~DwarfLines();
  DwarfLines(const DwarfLines&) = delete;
  DwarfLines& operator=(const DwarfLines&) = delete;

  // The source file (the line table's name: a full path when it records the directory) and line
  // of link-time `address`; false when the tables do not cover it. Thread-safe.
  bool Lookup(uint64_t address, std::string* file, int32_t* line) const;
  // The bytes of the file's debug sections that libdw holds (the cache's memory bound).
  uint64_t debug_bytes() const { return debug_bytes_; }

 private:
  DwarfLines(Elf* elf, Dwarf* dwarf, uint64_t debug_bytes)
      : elf_(elf), dwarf_(dwarf), debug_bytes_(debug_bytes) {}

  mutable std::mutex mu_;  // a libdw handle builds its tables lazily: one lookup at a time
  Elf* const elf_;
  Dwarf* const dwarf_;
  const uint64_t debug_bytes_;
};

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_DWARF_LINES_H_

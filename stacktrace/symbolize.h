// Symbolization of raw program counters outside the process they come from (docs/stacks.md
// "Symbolization"): the module map of /proc/PID/maps, the ELF symbol tables of the mapped files
// (.symtab, else .dynsym), C++ names demangled; file:line from the file's DWARF line table
// (stacktrace/dwarf_lines.h, libdw) where it has one, else the frame's line is 0.
//
// The ELF files are hostile input (a process can map any file it likes): every read is bounded
// (ElfLimits), every offset and size checked against the file's size before it is used, and a
// file that breaks a rule gives an error, never a crash. Files are opened through
// /proc/PID/map_files/START-END (the very file mapped), else through the path the kernel's maps
// line names, checked to be the mapped inode; never through a path the process sent.
#ifndef XTIMER_STACKTRACE_SYMBOLIZE_H_
#define XTIMER_STACKTRACE_SYMBOLIZE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stacktrace/dwarf_lines.h"
#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

// One line of /proc/PID/maps.
struct MapEntry {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  uint64_t dev_major = 0, dev_minor = 0, inode = 0;
  std::string path;   // "" for anonymous memory; "[stack]", "/usr/lib/x.so (deleted)" as written
};

constexpr size_t kMaxMapsBytes = 16 << 20;  // a maps file larger than this is cut there
constexpr size_t kMaxMapEntries = 1 << 18;

// Parses the text of /proc/PID/maps, sorted by start. Malformed lines are skipped.
std::vector<MapEntry> ParseMaps(const std::string& text);
// The entry holding `address`, or nullptr.
const MapEntry* FindMapping(const std::vector<MapEntry>& maps, uint64_t address);

// Bounds on what one ELF file may make the symbolizer read and keep.
struct ElfLimits {
  uint64_t max_file_bytes = uint64_t{8} << 30;
  uint32_t max_sections = 1 << 16;
  uint32_t max_segments = 1 << 12;
  uint64_t max_table_bytes = uint64_t{256} << 20;  // one symbol table or its string table
  // A file's .debug_* sections (decompressed), which libdw holds while the file is cached; a file
  // with more gives no lines.
  uint64_t max_debug_bytes = uint64_t{256} << 20;
  // The debug sections of all cached files together: older files leave the cache first.
  uint64_t max_cached_debug_bytes = uint64_t{1} << 30;
};

// A file's function symbols. Read() is given a bounded reader of the file (pread).
class ElfSymbols {
 public:
  // Reads `n` bytes at `offset` into `buf`; false when they are not all there.
  using ReadAt = std::function<bool(uint64_t offset, size_t n, void* buf)>;

  static std::optional<ElfSymbols> Read(const ReadAt& read, uint64_t file_size,
                                        const ElfLimits& limits, std::string* error);
  // The same over bytes in memory (tests).
  static std::optional<ElfSymbols> FromBytes(const std::string& bytes, std::string* error);

  // The link-time address of `file_offset` (a PT_LOAD segment holds it); false when none does.
  bool OffsetToAddress(uint64_t file_offset, uint64_t* address) const;
  // The name (mangled, as in the file) of the function holding `address`; "" when none does.
  std::string Lookup(uint64_t address) const;
  size_t size() const { return symbols_.size(); }
  const std::string& table() const { return table_; }  // ".symtab" or ".dynsym"

 private:
  struct Symbol {
    uint64_t value, size;
    uint32_t name;  // offset into strings_
  };
  struct Segment {
    uint64_t offset, filesz, vaddr;
  };
  bool LoadTable(const ReadAt& read, const std::vector<uint8_t>& sections, uint32_t index,
                 uint64_t file_size, const ElfLimits& limits, std::string* error);

  std::vector<Segment> segments_;
  std::vector<Symbol> symbols_;  // functions, by value
  std::string strings_;
  std::string table_;
};

// "ns::f(int)" for "_ZN2ns1fEi"; other names as they are. At most kMaxStringBytes bytes.
std::string Demangle(const std::string& name);

// Symbolizes pcs of live processes. Parsed files (symbols and line tables) are cached by (device,
// inode, mtime), so the ranks of one binary parse it once; at most `max_files` are kept, holding
// at most `limits.max_cached_debug_bytes` of DWARF (the oldest use goes first). Thread-safe.
class Symbolizer {
 public:
  explicit Symbolizer(std::string proc_root = "/proc", size_t max_files = 128,
                      ElfLimits limits = ElfLimits());

  // Frames for `pcs` (innermost first) of process `pid` whose module map is `maps`. The first pc
  // is the interrupted one; the others are return addresses, looked up at pc - 1. A pc outside
  // every file mapping gives a frame with no function and no module; one whose file cannot be
  // read, its module with no function (the reason is in *problems once per module). A frame whose
  // module has a DWARF line table covering it gets `file` and `line`.
  std::vector<Frame> Symbolize(int pid, const std::vector<MapEntry>& maps,
                               const std::vector<uint64_t>& pcs,
                               std::vector<std::string>* problems);
  // Files parsed since construction (tests: the cache works).
  uint64_t parsed() const;

 private:
  // One parsed file.
  struct Module {
    std::shared_ptr<const ElfSymbols> symbols;  // null: unreadable, `error` says why
    std::shared_ptr<const DwarfLines> lines;    // null: no line table, or `lines_error` says why
    std::string error, lines_error;
  };
  struct Entry {
    Module module;
    uint64_t last_use = 0;
  };
  using Key = std::tuple<uint64_t, uint64_t, int64_t, int64_t>;  // dev, inode, mtime s, ns
  // The mapping's file, from the cache or parsed.
  Module Load(int pid, const MapEntry& m);
  // Parses the file open on `fd` into a new cache entry.
  Entry Parse(int fd, uint64_t file_size);
  // Drops the least recently used entries until `incoming` debug bytes and one more file fit.
  void Evict(uint64_t incoming);
  static uint64_t DebugBytes(const Entry& e);

  const std::string proc_root_;
  const size_t max_files_;
  const ElfLimits limits_;
  mutable std::mutex mu_;
  std::map<Key, Entry> cache_;
  uint64_t uses_ = 0;
  uint64_t parsed_ = 0;
  uint64_t debug_bytes_ = 0;  // of the cached entries' line tables
};

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_SYMBOLIZE_H_

#include "stacktrace/dwarf_lines.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>

#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {
namespace {

bool StartsWith(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

// The bytes libdw would hold for the file's .debug_* sections; false with *error when a section
// cannot be sized or the file has old-style .zdebug ones. *has_lines: there is a .debug_line.
bool SizeDebugSections(Elf* elf, uint64_t* total, bool* has_lines, std::string* error) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return *error = elf_errmsg(-1), false;
  *total = 0;
  *has_lines = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return *error = elf_errmsg(-1), false;
    const char* name = elf_strptr(elf, names, sh.sh_name);
    if (name == nullptr) continue;
    if (StartsWith(name, ".zdebug")) return *error = "compressed .zdebug sections", false;
    if (!StartsWith(name, ".debug_") || sh.sh_type == SHT_NOBITS) continue;
    if (strcmp(name, ".debug_line") == 0) *has_lines = true;
    uint64_t size = sh.sh_size;
    if ((sh.sh_flags & SHF_COMPRESSED) != 0) {
      GElf_Chdr ch;
      if (gelf_getchdr(scn, &ch) == nullptr) return *error = elf_errmsg(-1), false;
      size = ch.ch_size;
    }
    *total = size > UINT64_MAX - *total ? UINT64_MAX : *total + size;
  }
  return true;
}

}  // namespace

std::unique_ptr<DwarfLines> DwarfLines::Open(int fd, uint64_t max_debug_bytes,
                                             std::string* error) {
  static const bool versioned = elf_version(EV_CURRENT) != EV_NONE;
  error->clear();
  if (!versioned) return *error = "libelf refuses its version", nullptr;
  // ELF_C_READ: pread on demand, never mmap (a file truncated under a mapping would SIGBUS us).
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (elf == nullptr) return *error = elf_errmsg(-1), nullptr;
  uint64_t bytes = 0;
  bool has_lines = false;
  if (elf_kind(elf) != ELF_K_ELF || !SizeDebugSections(elf, &bytes, &has_lines, error) ||
      !has_lines || bytes > max_debug_bytes) {
    if (has_lines && bytes > max_debug_bytes) {
      *error = "debug sections of " + std::to_string(bytes) + " bytes, over the limit of " +
               std::to_string(max_debug_bytes);
    }
    elf_end(elf);
    return nullptr;
  }
  Dwarf* dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);  // reads every debug section
  if (dwarf == nullptr) {
    *error = std::string("bad DWARF: ") + dwarf_errmsg(-1);
    elf_end(elf);
    return nullptr;
  }
  elf_cntl(elf, ELF_C_FDDONE);  // the fd is the caller's from here on
  return std::unique_ptr<DwarfLines>(new DwarfLines(elf, dwarf, bytes));
}

DwarfLines::~DwarfLines() {
  dwarf_end(dwarf_);
  elf_end(elf_);
}

bool DwarfLines::Lookup(uint64_t address, std::string* file, int32_t* line) const {
  std::lock_guard<std::mutex> lock(mu_);
  Dwarf_Die cu;
  if (dwarf_addrdie(dwarf_, address, &cu) == nullptr) return false;
  Dwarf_Line* row = dwarf_getsrc_die(&cu, address);
  int lineno = 0;
  if (row == nullptr || dwarf_lineno(row, &lineno) != 0 || lineno <= 0) return false;
  const char* src = dwarf_linesrc(row, nullptr, nullptr);
  if (src == nullptr || *src == '\0') return false;
  file->assign(src, strnlen(src, kMaxStringBytes));
  *line = lineno;
  return true;
}

}  // namespace stacktrace
}  // namespace xtimer

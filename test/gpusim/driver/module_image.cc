#include "test/gpusim/driver/module_image.h"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace xtsim {
namespace driver {
namespace {

// The fat binary wrapper's magic (fatbinary.h: FATBIN_MAGIC); not modelled (no kernel names
// can be read without unpacking it).
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
// A cubin's kernels are global STT_FUNC symbols marked as entry points in st_other (cuobjdump
// -elf shows them as STO_ENTRY); device functions that are not kernels lack the mark.
constexpr unsigned char kStoCudaEntry = 0x10;

bool InRange(size_t offset, size_t length, size_t size) {
  return size == 0 || (offset <= size && length <= size - offset);
}

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '$';
}

}  // namespace

ImageKind KindOf(const void* image) {
  if (image == nullptr) return ImageKind::kInvalid;
  const auto* b = static_cast<const unsigned char*>(image);
  if (memcmp(b, ELFMAG, SELFMAG) == 0) return ImageKind::kCubin;
  uint32_t magic;
  memcpy(&magic, b, sizeof(magic));
  if (magic == kFatbinMagic) return ImageKind::kFatbin;
  // PTX is text that starts with comments or directives (`//`, `.version`, whitespace).
  if (b[0] == '/' || b[0] == '.' || b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
    return ImageKind::kPtx;
  }
  return ImageKind::kInvalid;
}

bool CubinKernels(const void* image, size_t size, std::vector<std::string>* names) {
  const auto* base = static_cast<const unsigned char*>(image);
  if (!InRange(0, sizeof(Elf64_Ehdr), size)) return false;
  Elf64_Ehdr eh;
  memcpy(&eh, base, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr)) return false;
  if (!InRange(eh.e_shoff, size_t{eh.e_shnum} * sizeof(Elf64_Shdr), size)) return false;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (eh.e_shnum != 0) memcpy(sections.data(), base + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (sh.sh_link >= sections.size()) return false;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (!InRange(sh.sh_offset, sh.sh_size, size) ||
        !InRange(strtab.sh_offset, strtab.sh_size, size)) {
      return false;
    }
    for (size_t i = 0; i < sh.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      memcpy(&sym, base + sh.sh_offset + i * sizeof(Elf64_Sym), sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || ELF64_ST_BIND(sym.st_info) != STB_GLOBAL ||
          (sym.st_other & kStoCudaEntry) == 0 || sym.st_name >= strtab.sh_size) {
        continue;
      }
      const char* name = reinterpret_cast<const char*>(base + strtab.sh_offset + sym.st_name);
      names->emplace_back(name, strnlen(name, strtab.sh_size - sym.st_name));
    }
  }
  return true;
}

bool PtxKernels(const char* ptx, std::vector<std::string>* names) {
  static const char kEntry[] = ".entry";
  for (const char* p = strstr(ptx, kEntry); p != nullptr; p = strstr(p, kEntry)) {
    bool word_start = p == ptx || !IsIdentifierChar(p[-1]);
    p += sizeof(kEntry) - 1;
    if (!word_start || (*p != ' ' && *p != '\t')) continue;
    while (*p == ' ' || *p == '\t') ++p;
    const char* begin = p;
    while (IsIdentifierChar(*p)) ++p;
    if (p == begin) return false;
    names->emplace_back(begin, p);
  }
  return true;
}

}  // namespace driver
}  // namespace xtsim

#include "stacktrace/symbolize.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

namespace xtimer {
namespace stacktrace {
namespace {

bool ParseHex(const char** p, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(*p, &end, 16);
  if (end == *p || errno != 0) return false;
  *out = v;
  *p = end;
  return true;
}

// "start-end perms offset major:minor inode   path"
bool ParseMapsLine(const std::string& line, MapEntry* e) {
  const char* p = line.c_str();
  if (!ParseHex(&p, &e->start) || *p++ != '-' || !ParseHex(&p, &e->end) || *p++ != ' ') {
    return false;
  }
  const char* perms = p;
  while (*p != ' ' && *p != '\0') ++p;
  e->perms.assign(perms, p);
  if (*p++ != ' ' || !ParseHex(&p, &e->offset) || *p++ != ' ' || !ParseHex(&p, &e->dev_major) ||
      *p++ != ':' || !ParseHex(&p, &e->dev_minor) || *p++ != ' ') {
    return false;
  }
  char* end = nullptr;
  e->inode = strtoull(p, &end, 10);
  if (end == p) return false;
  p = end;
  while (*p == ' ') ++p;
  e->path = p;
  return e->start < e->end;
}

class FdReader {
 public:
  explicit FdReader(int fd) : fd_(fd) {}
  bool operator()(uint64_t offset, size_t n, void* buf) const {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = pread(fd_, static_cast<char*>(buf) + done, n - done,
                              static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  }

 private:
  int fd_;
};

// `offset + size` lies inside a file of `file_size` bytes (without overflowing).
bool Inside(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

}  // namespace

std::vector<MapEntry> ParseMaps(const std::string& text) {
  std::vector<MapEntry> out;
  size_t i = 0;
  const size_t limit = std::min(text.size(), kMaxMapsBytes);
  while (i < limit && out.size() < kMaxMapEntries) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos || j > limit) j = limit;
    MapEntry e;
    if (ParseMapsLine(text.substr(i, j - i), &e)) out.push_back(std::move(e));
    i = j + 1;
  }
  std::sort(out.begin(), out.end(),
            [](const MapEntry& a, const MapEntry& b) { return a.start < b.start; });
  return out;
}

const MapEntry* FindMapping(const std::vector<MapEntry>& maps, uint64_t address) {
  auto it = std::upper_bound(maps.begin(), maps.end(), address,
                             [](uint64_t a, const MapEntry& e) { return a < e.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

std::optional<ElfSymbols> ElfSymbols::Read(const ReadAt& read, uint64_t file_size,
                                           const ElfLimits& limits, std::string* error) {
  if (file_size > limits.max_file_bytes) return *error = "larger than the limit", std::nullopt;
  Elf64_Ehdr eh;
  if (file_size < sizeof(eh) || !read(0, sizeof(eh), &eh)) {
    return *error = "too short for an ELF header", std::nullopt;
  }
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return *error = "not an ELF file", std::nullopt;
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return *error = "not a 64-bit little-endian ELF file", std::nullopt;
  }
  ElfSymbols out;
  if (eh.e_phnum > 0) {
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > limits.max_segments ||
        !Inside(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr), file_size)) {
      return *error = "program headers out of bounds", std::nullopt;
    }
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (!read(eh.e_phoff, ph.size() * sizeof(Elf64_Phdr), ph.data())) {
      return *error = "program headers unreadable", std::nullopt;
    }
    for (const Elf64_Phdr& p : ph) {
      if (p.p_type == PT_LOAD) out.segments_.push_back({p.p_offset, p.p_filesz, p.p_vaddr});
    }
  }
  if (eh.e_shnum == 0) return *error = "no section headers (stripped of symbols)", std::nullopt;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum > limits.max_sections ||
      !Inside(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), file_size)) {
    return *error = "section headers out of bounds", std::nullopt;
  }
  std::vector<uint8_t> sections(size_t{eh.e_shnum} * sizeof(Elf64_Shdr));
  if (!read(eh.e_shoff, sections.size(), sections.data())) {
    return *error = "section headers unreadable", std::nullopt;
  }
  std::string why;
  for (uint32_t type : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (uint32_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      memcpy(&sh, sections.data() + size_t{i} * sizeof(sh), sizeof(sh));
      if (sh.sh_type != type) continue;
      if (out.LoadTable(read, sections, i, file_size, limits, &why) && !out.symbols_.empty()) {
        out.table_ = type == SHT_SYMTAB ? ".symtab" : ".dynsym";
        return out;
      }
      break;  // one table of each kind
    }
  }
  *error = why.empty() ? "no function symbols" : why;
  return std::nullopt;
}

bool ElfSymbols::LoadTable(const ReadAt& read, const std::vector<uint8_t>& sections,
                           uint32_t index, uint64_t file_size, const ElfLimits& limits,
                           std::string* error) {
  symbols_.clear();
  strings_.clear();
  const size_t count = sections.size() / sizeof(Elf64_Shdr);
  Elf64_Shdr sym, str;
  memcpy(&sym, sections.data() + size_t{index} * sizeof(sym), sizeof(sym));
  if (sym.sh_link >= count) return *error = "symbol table's string table index out of range", false;
  memcpy(&str, sections.data() + size_t{sym.sh_link} * sizeof(str), sizeof(str));
  if (str.sh_type != SHT_STRTAB) return *error = "symbol table linked to a non-string table", false;
  if ((sym.sh_entsize != 0 && sym.sh_entsize != sizeof(Elf64_Sym)) ||
      sym.sh_size > limits.max_table_bytes || str.sh_size > limits.max_table_bytes ||
      !Inside(sym.sh_offset, sym.sh_size, file_size) ||
      !Inside(str.sh_offset, str.sh_size, file_size)) {
    return *error = "symbol or string table out of bounds", false;
  }
  std::vector<Elf64_Sym> syms(sym.sh_size / sizeof(Elf64_Sym));
  strings_.resize(str.sh_size);
  if (!read(sym.sh_offset, syms.size() * sizeof(Elf64_Sym), syms.data()) ||
      !read(str.sh_offset, strings_.size(), &strings_[0])) {
    return *error = "symbol table unreadable", false;
  }
  for (const Elf64_Sym& s : syms) {
    const int type = ELF64_ST_TYPE(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
        s.st_value == 0 || s.st_name == 0 || s.st_name >= strings_.size()) {
      continue;
    }
    symbols_.push_back({s.st_value, s.st_size, s.st_name});
  }
  // By address; at one address the sized symbol first (an alias without size says less).
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.value != b.value ? a.value < b.value : a.size > b.size;
  });
  return true;
}

std::optional<ElfSymbols> ElfSymbols::FromBytes(const std::string& bytes, std::string* error) {
  auto read = [&bytes](uint64_t offset, size_t n, void* buf) {
    if (!Inside(offset, n, bytes.size())) return false;
    memcpy(buf, bytes.data() + offset, n);
    return true;
  };
  return Read(read, bytes.size(), ElfLimits(), error);
}

bool ElfSymbols::OffsetToAddress(uint64_t file_offset, uint64_t* address) const {
  for (const Segment& s : segments_) {
    if (file_offset >= s.offset && file_offset - s.offset < s.filesz) {
      *address = file_offset - s.offset + s.vaddr;
      return true;
    }
  }
  return false;
}

std::string ElfSymbols::Lookup(uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.value; });
  if (it == symbols_.begin()) return "";
  --it;
  // A symbol without a size is believed up to the next symbol.
  if (it->size != 0 && address - it->value >= it->size) return "";
  const char* name = strings_.data() + it->name;
  return std::string(name, strnlen(name, strings_.size() - it->name));
}

std::string Demangle(const std::string& name) {
  std::string out = name;
  if (name.size() > 2 && name.compare(0, 2, "_Z") == 0 && name.size() <= kMaxStringBytes) {
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d != nullptr) out = d;
    free(d);
  }
  if (out.size() > kMaxStringBytes) out.resize(kMaxStringBytes);
  return out;
}

Symbolizer::Symbolizer(std::string proc_root, size_t max_files, ElfLimits limits)
    : proc_root_(std::move(proc_root)), max_files_(std::max<size_t>(1, max_files)),
      limits_(limits) {}

uint64_t Symbolizer::parsed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return parsed_;
}

namespace {

// The mapped file: map_files (the very file; needs the daemon's privileges over the process),
// else the kernel's path for it when that path still names the mapped inode.
int OpenMapped(const std::string& proc_root, int pid, const MapEntry& m, std::string* error) {
  char name[64];
  snprintf(name, sizeof(name), "/map_files/%" PRIx64 "-%" PRIx64, m.start, m.end);
  int fd = open((proc_root + "/" + std::to_string(pid) + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) return fd;
  if (m.path.empty() || m.path[0] != '/') return *error = "not a file", -1;
  fd = open(m.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return *error = std::string("cannot open: ") + strerror(errno), -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != m.inode) {
    close(fd);
    return *error = "the file at this path is no longer the one mapped", -1;
  }
  return fd;
}

}  // namespace

Symbolizer::Entry Symbolizer::Parse(int fd, uint64_t file_size) {
  Entry e;
  std::optional<ElfSymbols> parsed =
      ElfSymbols::Read(FdReader(fd), file_size, limits_, &e.module.error);
  ++parsed_;
  if (!parsed.has_value()) return e;
  e.module.symbols = std::make_shared<ElfSymbols>(std::move(*parsed));
  // Lines only where there are symbols: their segments turn a pc into a link-time address.
  e.module.lines = DwarfLines::Open(fd, limits_.max_debug_bytes, &e.module.lines_error);
  return e;
}

uint64_t Symbolizer::DebugBytes(const Entry& e) {
  return e.module.lines == nullptr ? 0 : e.module.lines->debug_bytes();
}

void Symbolizer::Evict(uint64_t incoming) {
  while (!cache_.empty() && (cache_.size() >= max_files_ ||
                             debug_bytes_ + incoming > limits_.max_cached_debug_bytes)) {
    auto oldest = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
      return a.second.last_use < b.second.last_use;
    });
    debug_bytes_ -= DebugBytes(oldest->second);
    cache_.erase(oldest);
  }
}

Symbolizer::Module Symbolizer::Load(int pid, const MapEntry& m) {
  Module out;
  const int fd = OpenMapped(proc_root_, pid, m, &out.error);
  if (fd < 0) return out;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    out.error = "not a regular file";
    return out;
  }
  const Key key{st.st_dev, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
  std::lock_guard<std::mutex> lock(mu_);  // one parse per file even when ranks ask at once
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry e = Parse(fd, static_cast<uint64_t>(st.st_size));
    Evict(DebugBytes(e));
    debug_bytes_ += DebugBytes(e);
    it = cache_.emplace(key, std::move(e)).first;
  }
  close(fd);
  it->second.last_use = ++uses_;
  return it->second.module;
}

std::vector<Frame> Symbolizer::Symbolize(int pid, const std::vector<MapEntry>& maps,
                                         const std::vector<uint64_t>& pcs,
                                         std::vector<std::string>* problems) {
  std::vector<Frame> out;
  std::map<const MapEntry*, Module> loaded;
  std::set<std::string> reported;  // a file's problem once, though it has several mappings
  for (size_t i = 0; i < pcs.size(); ++i) {
    const uint64_t pc = i == 0 || pcs[i] == 0 ? pcs[i] : pcs[i] - 1;
    Frame f;
    const MapEntry* m = FindMapping(maps, pc);
    if (m == nullptr || m->inode == 0 || m->path.empty() || m->path[0] != '/') {
      if (m != nullptr) f.module = m->path;  // [vdso], [anon:...]
      out.push_back(std::move(f));
      continue;
    }
    f.module = m->path;
    auto it = loaded.find(m);
    if (it == loaded.end()) {
      it = loaded.emplace(m, Load(pid, *m)).first;
      const Module& mod = it->second;
      if ((mod.symbols == nullptr || !mod.lines_error.empty()) && reported.insert(m->path).second) {
        problems->push_back(m->path + (mod.symbols == nullptr ? ": no symbols (" + mod.error
                                                              : ": no file:line (" + mod.lines_error) +
                            ")");
      }
    }
    const Module& mod = it->second;
    uint64_t address;
    if (mod.symbols != nullptr && mod.symbols->OffsetToAddress(pc - m->start + m->offset, &address)) {
      f.function = Demangle(mod.symbols->Lookup(address));
      if (mod.lines != nullptr) mod.lines->Lookup(address, &f.file, &f.line);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace stacktrace
}  // namespace xtimer

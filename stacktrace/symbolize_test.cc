#include "stacktrace/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <utility>

#include "gtest/gtest.h"

namespace xtimer_symbolize_test {
// Functions of this binary that the symbolizer must name (not inlined, not merged).
__attribute__((noinline)) int MarkerFunction(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}
template <typename T>
struct Holder {
  __attribute__((noinline)) static T Twice(T v) {
    asm volatile("" ::: "memory");
    return v + v;
  }
};
}  // namespace xtimer_symbolize_test

extern "C" __attribute__((noinline)) int xtimer_plain_c_marker(int x) {
  asm volatile("" ::: "memory");
  return x - 1;
}

// The return address of its call: a pc in the caller, at the line of the call.
extern "C" __attribute__((noinline)) unsigned long xtimer_return_address() {
  asm volatile("" ::: "memory");
  return reinterpret_cast<unsigned long>(__builtin_return_address(0));
}

namespace xtimer {
namespace stacktrace {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(ParseMaps, ReadsTheKernelsLines) {
  const auto maps = ParseMaps(
      "7f00-7f10 r-xp 00001000 08:02 1234                       /usr/lib/x.so\n"
      "garbage line\n"
      "1000-2000 rw-p 00000000 00:00 0 \n"
      "3000-4000 r--p 00000000 fd:01 99 /path with spaces (deleted)\n");
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].start, 0x1000u);
  EXPECT_EQ(maps[0].path, "");
  EXPECT_EQ(maps[1].path, "/path with spaces (deleted)");
  EXPECT_EQ(maps[1].dev_major, 0xfdu);
  EXPECT_EQ(maps[2].offset, 0x1000u);
  EXPECT_EQ(maps[2].inode, 1234u);
  EXPECT_EQ(maps[2].perms, "r-xp");
  EXPECT_EQ(FindMapping(maps, 0x7f0f), &maps[2]);
  EXPECT_EQ(FindMapping(maps, 0x7f10), nullptr);
  EXPECT_EQ(FindMapping(maps, 0x999), nullptr);
}

TEST(Demangle, CxxNamesAndOthers) {
  EXPECT_EQ(Demangle("_ZN2ns1fEi"), "ns::f(int)");
  EXPECT_EQ(Demangle("ncclAllReduce"), "ncclAllReduce");
  EXPECT_EQ(Demangle("_Zgarbage"), "_Zgarbage");
}

TEST(Symbolizer, NamesThisBinarysFunctionsDemangled) {
  Symbolizer s;
  const auto maps = ParseMaps(ReadAll("/proc/self/maps"));
  // The first pc is taken as it is; the others are return addresses (looked up at pc - 1).
  const std::vector<uint64_t> pcs = {
      Addr(reinterpret_cast<void*>(&xtimer_symbolize_test::MarkerFunction)) + 1,
      Addr(reinterpret_cast<void*>(&xtimer_symbolize_test::Holder<long>::Twice)) + 2,
      Addr(reinterpret_cast<void*>(&xtimer_plain_c_marker)) + 2,
      0x10,  // nowhere
  };
  xtimer_symbolize_test::MarkerFunction(1);
  std::vector<std::string> problems;
  const std::vector<Frame> frames = s.Symbolize(getpid(), maps, pcs, &problems);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].function, "xtimer_symbolize_test::MarkerFunction(int)");
  EXPECT_EQ(frames[1].function, "xtimer_symbolize_test::Holder<long>::Twice(long)");
  EXPECT_EQ(frames[2].function, "xtimer_plain_c_marker");
  EXPECT_EQ(frames[0].module, frames[1].module);
  EXPECT_EQ(frames[0].module.find('/'), 0u) << frames[0].module;
  EXPECT_EQ(frames[0].kind, Frame::kNative);
  EXPECT_EQ(frames[3].function, "");
  EXPECT_EQ(frames[3].module, "");
  EXPECT_TRUE(problems.empty()) << problems[0];
  // A second process of the same binary (another symbolization) parses nothing again.
  const uint64_t parsed = s.parsed();
  EXPECT_GE(parsed, 1u);
  s.Symbolize(getpid(), maps, pcs, &problems);
  EXPECT_EQ(s.parsed(), parsed);
}

// testdata/liblined_module.so, built with -g and not stripped: a pc in it, the expected line.
struct LinedModule {
  std::string path = "stacktrace/testdata/liblined_module.so";  // in the test's runfiles
  uint64_t pc = 0;
  int32_t line = -1;
};

LinedModule LoadLinedModule() {
  LinedModule m;
  void* h = dlopen(m.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return m;
  using Call = unsigned long (*)(unsigned long (*)());
  auto call = reinterpret_cast<Call>(dlsym(h, "xtimer_lined_call"));
  auto line = static_cast<const int*>(dlsym(h, "xtimer_lined_call_line"));
  if (call == nullptr || line == nullptr) return m;
  m.pc = call(&xtimer_return_address);
  m.line = *line;
  return m;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(Symbolizer, FileAndLineFromDwarf) {
  const LinedModule lined = LoadLinedModule();
  ASSERT_NE(lined.pc, 0u) << dlerror();
  Symbolizer s;
  const auto maps = ParseMaps(ReadAll("/proc/self/maps"));
  std::vector<std::string> problems;
  // The pc is a return address: the second frame (looked up at pc - 1).
  const std::vector<Frame> frames = s.Symbolize(getpid(), maps, {0x10, lined.pc}, &problems);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].function, "xtimer_lined_call");
  EXPECT_EQ(frames[1].line, lined.line);
  EXPECT_TRUE(EndsWith(frames[1].file, "stacktrace/testdata/lined_module.cc")) << frames[1].file;
  EXPECT_TRUE(EndsWith(frames[1].module, "liblined_module.so")) << frames[1].module;
  EXPECT_TRUE(problems.empty()) << problems[0];
}

TEST(Symbolizer, NamesLibcFunctions) {
  Symbolizer s;
  const auto maps = ParseMaps(ReadAll("/proc/self/maps"));
  std::vector<std::string> problems;
  const auto frames =
      s.Symbolize(getpid(), maps, {Addr(reinterpret_cast<void*>(&::getppid)) + 1}, &problems);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].function.find("getppid"), std::string::npos) << frames[0].function;
  EXPECT_NE(frames[0].module.find("libc"), std::string::npos) << frames[0].module;
  // Debian's libc has no debug sections: no line, as before line tables were read.
  EXPECT_EQ(frames[0].line, 0);
  EXPECT_EQ(frames[0].file, "");
}

TEST(Symbolizer, UnreadableFileIsOneProblemAndModuleOnly) {
  Symbolizer s("/nonexistent-proc");
  MapEntry m;
  m.start = 0x1000;
  m.end = 0x2000;
  m.inode = 7;
  m.path = "/nonexistent/lib.so";
  std::vector<std::string> problems;
  const auto frames = s.Symbolize(1, {m}, {0x1100, 0x1200}, &problems);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].module, "/nonexistent/lib.so");
  EXPECT_EQ(frames[1].function, "");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("cannot open"), std::string::npos) << problems[0];
}

TEST(Symbolizer, RefusesAFileThatIsNotTheMappedInode) {
  Symbolizer s("/nonexistent-proc");  // no map_files: the path is the only way
  MapEntry m;
  m.start = 0x1000;
  m.end = 0x2000;
  m.inode = 1;  // /proc/self/exe has another inode
  m.path = "/proc/self/exe";
  std::vector<std::string> problems;
  s.Symbolize(1, {m}, {0x1100}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no longer the one mapped"), std::string::npos) << problems[0];
}

// Where section `name` of the ELF image `elf` lies: {offset, size}, {0, 0} if absent.
std::pair<uint64_t, uint64_t> FindSection(const std::string& elf, const std::string& name) {
  Elf64_Ehdr eh;
  memcpy(&eh, elf.data(), sizeof(eh));
  Elf64_Shdr names;
  memcpy(&names, elf.data() + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(names));
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    if (name == elf.data() + names.sh_offset + sh.sh_name) return {sh.sh_offset, sh.sh_size};
  }
  return {0, 0};
}

// A copy of liblined_module.so (tests damage its debug sections) and the mapping of its code
// moved onto the copy.
class CopyOfLinedModule : public ::testing::Test {
 protected:
  void SetUp() override {
    lined_ = LoadLinedModule();
    ASSERT_NE(lined_.pc, 0u) << dlerror();
    pc_ = lined_.pc - 1;  // looked up as the innermost frame: as it is
    const auto maps = ParseMaps(ReadAll("/proc/self/maps"));
    const MapEntry* m = FindMapping(maps, pc_);
    ASSERT_NE(m, nullptr);
    original_ = *m;
    bytes_ = ReadAll(m->path);
    const char* dir = getenv("TEST_TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/lined_module_copy." +
            std::to_string(getpid());
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd_, 0) << path_;
    Overwrite(0, bytes_);
    struct stat st;
    ASSERT_EQ(fstat(fd_, &st), 0);
    mapping_ = *m;
    mapping_.path = path_;
    mapping_.inode = st.st_ino;
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  // The copy's frame (opened by path: no map_files), parsed afresh.
  Frame Symbolize(const ElfLimits& limits, std::vector<std::string>* problems) {
    Symbolizer s("/nonexistent-proc", 4, limits);
    const auto frames = s.Symbolize(1, {mapping_}, {pc_}, problems);
    return frames.empty() ? Frame() : frames[0];
  }
  void Overwrite(uint64_t offset, const std::string& bytes) {
    ASSERT_EQ(pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(bytes.size()));
  }

  LinedModule lined_;
  std::string bytes_, path_;
  int fd_ = -1;
  uint64_t pc_ = 0;
  MapEntry original_, mapping_;
};

TEST_F(CopyOfLinedModule, CorruptLineTableGivesNoLineAndNoCrash) {
  std::vector<std::string> problems;
  Frame f = Symbolize(ElfLimits(), &problems);  // intact: the control
  EXPECT_EQ(f.line, lined_.line);
  const auto lines = FindSection(bytes_, ".debug_line");
  ASSERT_GT(lines.second, 16u);
  Overwrite(lines.first, std::string(lines.second, '\xff'));
  f = Symbolize(ElfLimits(), &problems);
  EXPECT_EQ(f.function, "xtimer_lined_call");
  EXPECT_EQ(f.line, 0);
  EXPECT_EQ(f.file, "");
  // Random bytes of the table flipped: any line or none, never a crash (run under ASan too).
  std::mt19937_64 rng(21);
  for (int round = 0; round < 200; ++round) {
    std::string table = bytes_.substr(lines.first, lines.second);
    for (int i = 1 + static_cast<int>(rng() % 16); i > 0; --i) {
      table[rng() % table.size()] = static_cast<char>(rng());
    }
    Overwrite(lines.first, table);
    f = Symbolize(ElfLimits(), &problems);
    EXPECT_EQ(f.function, "xtimer_lined_call") << round;
  }
}

TEST_F(CopyOfLinedModule, DebugSectionsOverTheLimitGiveNoLine) {
  ElfLimits limits;
  limits.max_debug_bytes = 16;
  std::vector<std::string> problems;
  const Frame f = Symbolize(limits, &problems);
  EXPECT_EQ(f.function, "xtimer_lined_call");
  EXPECT_EQ(f.line, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no file:line (debug sections of"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("over the limit of 16"), std::string::npos) << problems[0];
}

// Two files whose line tables do not fit the cache's DWARF budget together evict each other.
TEST_F(CopyOfLinedModule, CachedDebugBytesAreBounded) {
  for (uint64_t budget : {uint64_t{1} << 30, uint64_t{1}}) {
    ElfLimits limits;
    limits.max_cached_debug_bytes = budget;
    Symbolizer s("/nonexistent-proc", 8, limits);  // both by path
    std::vector<std::string> problems;
    for (int i = 0; i < 2; ++i) {
      EXPECT_GT(s.Symbolize(1, {original_}, {pc_}, &problems)[0].line, 0);
      EXPECT_GT(s.Symbolize(1, {mapping_}, {pc_}, &problems)[0].line, 0);
    }
    EXPECT_EQ(s.parsed(), budget == 1 ? 4u : 2u) << budget;
  }
}

// Corrupt and truncated ELF files: every read stays inside the file and no input crashes
// (run under ASan: bazel test --config=asan //stacktrace:symbolize_test).
TEST(ElfSymbols, TruncatedAndCorruptFilesNeverCrash) {
  const std::string exe = ReadAll("/proc/self/exe");
  std::string error;
  auto whole = ElfSymbols::FromBytes(exe, &error);
  ASSERT_TRUE(whole.has_value()) << error;
  EXPECT_EQ(whole->table(), ".symtab");
  EXPECT_GT(whole->size(), 100u);

  for (size_t n : {size_t{0}, size_t{3}, size_t{63}, size_t{64}, size_t{200}, exe.size() / 2,
                   exe.size() - 1}) {
    auto r = ElfSymbols::FromBytes(exe.substr(0, n), &error);
    if (n < 64) {
      EXPECT_FALSE(r.has_value()) << n;
    }
    if (!r.has_value()) {
      EXPECT_FALSE(error.empty());
    }
  }
  // Random bytes flipped in the headers and the tables they point at, read through a reader that
  // overlays them (the file is large): any outcome but a crash or an out-of-bounds read.
  std::mt19937_64 rng(21);
  size_t refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::map<uint64_t, uint8_t> patch;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) {
      const uint64_t where = rng() % 2 == 0 ? rng() % 64 : rng() % std::min<size_t>(exe.size(), 4096);
      patch[rng() % 3 == 0 ? exe.size() - 1 - rng() % std::min<size_t>(exe.size(), 8192) : where] =
          static_cast<uint8_t>(rng());
    }
    const uint64_t size = rng() % 4 == 0 ? rng() % exe.size() : exe.size();
    auto read = [&](uint64_t offset, size_t n, void* buf) {
      if (offset > size || n > size - offset) return false;
      memcpy(buf, exe.data() + offset, n);
      for (auto it = patch.lower_bound(offset); it != patch.end() && it->first < offset + n; ++it) {
        static_cast<uint8_t*>(buf)[it->first - offset] = it->second;
      }
      return true;
    };
    ElfLimits limits;
    limits.max_table_bytes = 64 << 20;
    auto r = ElfSymbols::Read(read, size, limits, &error);
    if (!r.has_value()) {
      ++refused;
      continue;
    }
    uint64_t address = 0;
    r->OffsetToAddress(rng() % exe.size(), &address);
    r->Lookup(address);
  }
  EXPECT_GT(refused, 0u);
}

TEST(ElfSymbols, NotElfAndWrongClass) {
  std::string error;
  EXPECT_FALSE(ElfSymbols::FromBytes(std::string(100, 'x'), &error).has_value());
  EXPECT_EQ(error, "not an ELF file");
  std::string elf32 = "\x7f" "ELF";
  elf32 += std::string(60, '\x01');  // EI_CLASS 1: 32-bit
  EXPECT_FALSE(ElfSymbols::FromBytes(elf32, &error).has_value());
  EXPECT_EQ(error, "not a 64-bit little-endian ELF file");
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

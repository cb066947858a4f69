#include "test/gpusim/driver/module_image.h"

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtsim {
namespace driver {
namespace {

// A minimal cubin-shaped ELF: a symbol table with one kernel (STT_FUNC, global, entry mark), one
// device function (no entry mark), one local function and one object.
std::vector<unsigned char> TinyCubin() {
  const std::string strtab = std::string("\0kern_a\0helper\0local_f\0data\0", 29);
  std::vector<Elf64_Sym> syms(5);
  auto sym = [&](size_t i, uint32_t name, unsigned char bind, unsigned char type,
                 unsigned char other) {
    memset(&syms[i], 0, sizeof(Elf64_Sym));
    syms[i].st_name = name;
    syms[i].st_info = ELF64_ST_INFO(bind, type);
    syms[i].st_other = other;
  };
  sym(0, 0, 0, 0, 0);
  sym(1, 1, STB_GLOBAL, STT_FUNC, 0x10);   // kern_a: a kernel
  sym(2, 8, STB_GLOBAL, STT_FUNC, 0);      // helper: a device function
  sym(3, 15, STB_LOCAL, STT_FUNC, 0x10);   // local_f
  sym(4, 23, STB_GLOBAL, STT_OBJECT, 0);   // data
  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof(eh));
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 3;
  size_t sym_off = sizeof(eh);
  size_t str_off = sym_off + syms.size() * sizeof(Elf64_Sym);
  eh.e_shoff = str_off + strtab.size();
  Elf64_Shdr sh[3];
  memset(sh, 0, sizeof(sh));
  sh[1].sh_type = SHT_SYMTAB;
  sh[1].sh_offset = sym_off;
  sh[1].sh_size = syms.size() * sizeof(Elf64_Sym);
  sh[1].sh_entsize = sizeof(Elf64_Sym);
  sh[1].sh_link = 2;
  sh[2].sh_type = SHT_STRTAB;
  sh[2].sh_offset = str_off;
  sh[2].sh_size = strtab.size();
  std::vector<unsigned char> out(eh.e_shoff + sizeof(sh));
  memcpy(out.data(), &eh, sizeof(eh));
  memcpy(out.data() + sym_off, syms.data(), sh[1].sh_size);
  memcpy(out.data() + str_off, strtab.data(), strtab.size());
  memcpy(out.data() + eh.e_shoff, sh, sizeof(sh));
  return out;
}

TEST(ModuleImageTest, CubinKernelsAreGlobalEntryFunctions) {
  std::vector<unsigned char> image = TinyCubin();
  EXPECT_EQ(KindOf(image.data()), ImageKind::kCubin);
  std::vector<std::string> names;
  ASSERT_TRUE(CubinKernels(image.data(), image.size(), &names));
  EXPECT_EQ(names, std::vector<std::string>({"kern_a"}));
}

TEST(ModuleImageTest, TruncatedCubinIsRejected) {
  std::vector<unsigned char> image = TinyCubin();
  std::vector<std::string> names;
  EXPECT_FALSE(CubinKernels(image.data(), image.size() - 8, &names));
  EXPECT_FALSE(CubinKernels(image.data(), 16, &names));
}

TEST(ModuleImageTest, PtxEntries) {
  const char* ptx =
      "//\n.version 8.0\n.target sm_90\n"
      ".visible .entry add_kernel(\n .param .u64 p\n)\n{ ret; }\n"
      ".func helper()\n{ ret; }\n"
      ".entry\t_Z6matmulPf (.param .u64 p) { ret; }\n"
      ".reg .b32 %not_an_entry;\n";
  EXPECT_EQ(KindOf(ptx), ImageKind::kPtx);
  std::vector<std::string> names;
  ASSERT_TRUE(PtxKernels(ptx, &names));
  EXPECT_EQ(names, std::vector<std::string>({"add_kernel", "_Z6matmulPf"}));
}

TEST(ModuleImageTest, OtherBytesAreNoImage) {
  const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0, 0};
  EXPECT_EQ(KindOf(fatbin), ImageKind::kFatbin);
  const char junk[] = "\x01\x02garbage";
  EXPECT_EQ(KindOf(junk), ImageKind::kInvalid);
  EXPECT_EQ(KindOf(nullptr), ImageKind::kInvalid);
}

}  // namespace
}  // namespace driver
}  // namespace xtsim

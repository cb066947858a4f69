#include "daemon/model/kernel_names.h"

#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace daemon {
namespace {

const auto kGrant = [](size_t) { return true; };

// Adds every part of `name` (format::NamePart, as the hook sends it); returns the last delta.
int64_t AddName(KernelNames* names, uint32_t id, const std::string& name, size_t max = 16) {
  int64_t delta = 0;
  for (size_t i = 0; i < format::NamePartCount(name.size()); ++i) {
    delta = names->Add(format::NamePart(id, name, i).name, max, kGrant);
  }
  return delta;
}

TEST(KernelNamesTest, ReassemblesNamesOfSeveralParts) {
  KernelNames names;
  const std::string longer(3 * format::kNameChunk + 7, 'k');
  EXPECT_EQ(AddName(&names, 1, "gemm"), static_cast<int64_t>(4 + kHashNodeBytes));
  EXPECT_EQ(AddName(&names, 2, longer), static_cast<int64_t>(longer.size() + kHashNodeBytes));
  ASSERT_NE(names.Find(2), nullptr);
  EXPECT_EQ(*names.Find(1), "gemm");
  EXPECT_EQ(*names.Find(2), longer);
  EXPECT_EQ(names.Find(3), nullptr);
}

TEST(KernelNamesTest, AnOutOfOrderPartDropsTheName) {
  KernelNames names;
  const std::string name(2 * format::kNameChunk + 1, 'n');
  names.Add(format::NamePart(1, name, 0).name, 16, kGrant);
  EXPECT_EQ(names.Add(format::NamePart(1, name, 2).name, 16, kGrant), 0);  // part 1 missing
  EXPECT_EQ(names.Find(1), nullptr);
  EXPECT_EQ(AddName(&names, 1, name) > 0, true);  // sent again in order: kept
}

TEST(KernelNamesTest, NamesAreCutAtTheMaximumLength) {
  KernelNames names;
  AddName(&names, 1, std::string(KernelNames::kMaxLength + 500, 'x'));
  ASSERT_NE(names.Find(1), nullptr);
  EXPECT_EQ(names.Find(1)->size(), KernelNames::kMaxLength);
}

TEST(KernelNamesTest, TheTableIsBoundedAndAsksTheBudget) {
  KernelNames names;
  AddName(&names, 1, "a", /*max=*/2);
  AddName(&names, 2, "b", 2);
  EXPECT_EQ(AddName(&names, 3, "c", 2), 0);  // full
  EXPECT_EQ(names.Find(3), nullptr);
  EXPECT_EQ(AddName(&names, 2, "bbb", 2), 2);  // a replacement is always allowed
  EXPECT_EQ(*names.Find(2), "bbb");
  const auto refuse = [](size_t) { return false; };
  EXPECT_EQ(names.Add(format::NamePart(1, "aaaa", 0).name, 2, refuse), 0);  // growth refused
  EXPECT_EQ(*names.Find(1), "a");
  EXPECT_EQ(names.Add(format::NamePart(1, "", 0).name, 2, refuse), -1);  // shrinking needs no grant
  EXPECT_EQ(names.size(), 2u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

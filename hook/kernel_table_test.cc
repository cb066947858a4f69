#include "hook/kernel_table.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace hook {
namespace {

TEST(KernelTableTest, FilterAndCache) {
  static KernelTable t;
  EXPECT_FALSE(t.SetFilter("("));  // not a regex: nothing is timed
  EXPECT_FALSE(t.filter_enabled());
  ASSERT_TRUE(t.SetFilter("^gemm|attn"));
  EXPECT_TRUE(t.filter_enabled());
  int f1, f2, f3;
  bool known = true;
  uint32_t id = 0;
  EXPECT_FALSE(t.Cached(&f1, &known, &id));
  EXPECT_FALSE(known);
  EXPECT_TRUE(t.Classify(&f1, "_Z11gemm_kernelPfi", &id));
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(t.Name(1), "gemm_kernel(float*, int)");
  EXPECT_FALSE(t.Classify(&f2, "_Z4reluPf", &id));
  EXPECT_TRUE(t.Classify(&f3, "flash_attn_fwd", &id));  // not mangled: used as is
  EXPECT_EQ(id, 2u);
  uint32_t cached = 0;
  EXPECT_TRUE(t.Cached(&f1, &known, &cached));
  EXPECT_TRUE(known);
  EXPECT_EQ(cached, 1u);
  EXPECT_FALSE(t.Cached(&f2, &known, &cached));
  EXPECT_TRUE(known);
  t.MapHandle(&f2, &f1);
  EXPECT_EQ(t.FunctionOf(&f2), &f1);
  EXPECT_EQ(t.FunctionOf(&f3), nullptr);
}

TEST(KernelTableTest, OffUntilSetAndEveryKernelByDefault) {
  static KernelTable off;  // XTIMER_KERNEL_FILTER=off: SetFilter is never called
  int f;
  uint32_t id = 7;
  EXPECT_FALSE(off.filter_enabled());
  EXPECT_FALSE(off.Classify(&f, "_Z4reluPf", &id));
  static KernelTable all;
  ASSERT_TRUE(all.SetFilter(""));  // XTIMER_KERNEL_FILTER unset: every kernel
  EXPECT_TRUE(all.filter_enabled());
  EXPECT_TRUE(all.Classify(&f, "_Z4reluPf", &id));
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(all.Name(1), "relu(float*)");
}

TEST(KernelTableTest, NameTableIsBounded) {
  static KernelTable t;
  ASSERT_TRUE(t.SetFilter(""));
  static char functions[KernelTable::kMaxNames + 2];
  uint32_t id = 0;
  for (size_t i = 0; i < KernelTable::kMaxNames; ++i) {
    ASSERT_TRUE(t.Classify(&functions[i], "k", &id));
    ASSERT_EQ(id, i + 1);
  }
  // Beyond the cap: timed, unnamed (id 0), and cached as such.
  id = 9;
  EXPECT_TRUE(t.Classify(&functions[KernelTable::kMaxNames], "k", &id));
  EXPECT_EQ(id, 0u);
  bool known = false;
  id = 9;
  EXPECT_TRUE(t.Cached(&functions[KernelTable::kMaxNames], &known, &id));
  EXPECT_TRUE(known);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(t.Name(KernelTable::kMaxNames + 1), "");
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

// The version string (//:VERSION) names the ring and record layouts this build speaks.
#include "util/version.h"

#include <string>

#include <gtest/gtest.h>

#include "format/record.h"
#include "format/ring.h"

namespace xtimer {
namespace {

TEST(VersionTest, NamesTheRingAndRecordVersions) {
  const std::string v = kVersion;
  const std::string layouts = "(ring v" + std::to_string(format::kRingVersion) + ", record v" +
                              std::to_string(format::kRecordVersion) + ")";
  EXPECT_EQ(v.rfind("xtimer ", 0), 0u) << v;
  EXPECT_NE(v.find(layouts), std::string::npos)
      << "VERSION says '" << v << "'; update it to name " << layouts;
}

}  // namespace
}  // namespace xtimer

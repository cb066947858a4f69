#include "stacktrace/cxx_name.h"

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

// Names as abi::__cxa_demangle writes them (the symbolizer's, stacktrace/symbolize.cc).
TEST(CxxNameTest, ShortFunctionNames) {
  EXPECT_EQ(ShortFunctionName("pause"), "pause");
  EXPECT_EQ(ShortFunctionName("main"), "main");
  EXPECT_EQ(ShortFunctionName("(anonymous namespace)::StopInHostCode((anonymous namespace)::Rank "
                              "const&, char const*, long)"),
            "StopInHostCode");
  EXPECT_EQ(ShortFunctionName("void std::condition_variable::wait<cudaEventSynchronize::{lambda()"
                              "#1}>(std::unique_lock<std::mutex>&, cudaEventSynchronize::{lambda()"
                              "#1})"),
            "std::condition_variable::wait<...>");
  EXPECT_EQ(ShortFunctionName("cudaEventSynchronize::{lambda()#1}::operator()() const"),
            "cudaEventSynchronize::{lambda()#1}::operator()");
  EXPECT_EQ(ShortFunctionName("bool std::operator< <char>(std::string const&, std::string "
                              "const&)"),
            "std::operator< <char>");
  EXPECT_EQ(ShortFunctionName("Foo::operator new(unsigned long)"), "Foo::operator new");
  EXPECT_EQ(ShortFunctionName("Foo::get() const &"), "Foo::get");
  EXPECT_EQ(ShortFunctionName("unsigned long Sum<int>(int const*, unsigned long)"), "Sum<...>");
  EXPECT_EQ(ShortFunctionName("broken(int"), "broken(int");  // unbalanced: kept whole
  EXPECT_EQ(ShortFunctionName("x)"), "x)");
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer

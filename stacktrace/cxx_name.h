// Reading a demangled C++ function name (as abi::__cxa_demangle writes it, docs/stacks.md):
// its qualified name without return type, parameters and template arguments, for the one-line
// summaries and for telling the C++ standard library's code from the application's.
#ifndef XTIMER_STACKTRACE_CXX_NAME_H_
#define XTIMER_STACKTRACE_CXX_NAME_H_

#include <string>

namespace xtimer {
namespace stacktrace {

// A C++ function's name as summaries show it: without its parameter list, qualifiers and
// return type, template arguments as <...>, no "(anonymous namespace)::":
// "void std::condition_variable::wait<F>(std::unique_lock<std::mutex>&, F)" ->
// "std::condition_variable::wait<...>". A name it cannot read (or a C name) is kept whole.
std::string ShortFunctionName(const std::string& function);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_CXX_NAME_H_

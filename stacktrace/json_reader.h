// A small, bounded JSON reader (a DOM) for the files the CLI reads, e.g. the per-rank .stacks
// files (docs/stacks.md). Any input gives a value or an error, never a crash: nesting is limited
// to kMaxJsonDepth, every allocation is bounded by the input's size. Strings are bytes: \uXXXX
// escapes become UTF-8 (a lone surrogate becomes U+FFFD).
#ifndef XTIMER_STACKTRACE_JSON_READER_H_
#define XTIMER_STACKTRACE_JSON_READER_H_

#include <string>
#include <utility>
#include <vector>

namespace xtimer {
namespace stacktrace {

constexpr int kMaxJsonDepth = 32;

struct JsonValue {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = kNull;
  bool boolean = false;
  double number = 0;
  bool is_integer = false;  // kNumber written without '.', 'e' or 'E' that fits in int64_t
  long long integer = 0;    // its value when is_integer (exact, unlike `number` above 2^53)
  std::string str;
  std::vector<JsonValue> items;                            // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in input order

  // The member named `key` of an object (the first one), or nullptr.
  const JsonValue* Find(const char* key) const;
};

// Parses `text` (one value, whitespace around it allowed). On failure returns false with
// *error naming the byte offset and what was expected.
bool ParseJson(const std::string& text, JsonValue* out, std::string* error);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_JSON_READER_H_

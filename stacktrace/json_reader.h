// A small, bounded JSON reader (a DOM) for the files the CLI reads, e.g. the per-rank .stacks
// files (docs/stacks.md). Any input gives a value or an error, never a crash: nesting is limited
// to kMaxJsonDepth, every allocation is bounded by the input's size. Strings are bytes: \uXXXX
// escapes become UTF-8 (a lone surrogate becomes U+FFFD).
#ifndef XTIMER_STACKTRACE_JSON_READER_H_
#define XTIMER_STACKTRACE_JSON_READER_H_

#include <cstdint>
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

// Field readers of one object: each returns false with *error ("<where>\"name\" why") naming the
// field when it is missing (if required), of the wrong type or out of range.
class JsonFields {
 public:
  JsonFields(const JsonValue& object, std::string where, std::string* error)
      : object_(object), where_(std::move(where)), error_(error) {}

  bool Int(const char* name, int64_t lo, int64_t hi, bool required, int64_t* out) {
    const JsonValue* v = object_.Find(name);
    if (v == nullptr) return !required || Fail(name, "is missing");
    if (!v->is_integer) return Fail(name, "is not a whole number");
    if (v->integer < lo || v->integer > hi) {
      return Fail(name, "is " + std::to_string(v->integer) + ", outside [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "]");
    }
    *out = v->integer;
    return true;
  }
  bool Str(const char* name, size_t max_bytes, bool required, std::string* out) {
    const JsonValue* v = object_.Find(name);
    if (v == nullptr) return !required || Fail(name, "is missing");
    if (v->type != JsonValue::kString) return Fail(name, "is not a string");
    if (v->str.size() > max_bytes) {
      return Fail(name, "is " + std::to_string(v->str.size()) + " bytes long, over " +
                            std::to_string(max_bytes));
    }
    *out = v->str;
    return true;
  }
  const JsonValue* Array(const char* name, size_t max_items) {
    const JsonValue* v = object_.Find(name);
    if (v == nullptr) return Fail(name, "is missing"), nullptr;
    if (v->type != JsonValue::kArray) return Fail(name, "is not an array"), nullptr;
    if (v->items.size() > max_items) {
      return Fail(name, "has " + std::to_string(v->items.size()) + " entries, over " +
                            std::to_string(max_items)), nullptr;
    }
    return v;
  }
  bool Fail(const char* name, const std::string& why) {
    *error_ = where_ + "\"" + name + "\" " + why;
    return false;
  }

 private:
  const JsonValue& object_;
  std::string where_;
  std::string* error_;
};

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_JSON_READER_H_

#include "stacktrace/json_reader.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace xtimer {
namespace stacktrace {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : p_(text.data()), begin_(p_), end_(p_ + text.size()) {}

  bool ParseDocument(JsonValue* out) {
    if (!Value(out, 0)) return false;
    SkipSpace();
    return p_ == end_ || Fail("end of input");
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const char* expected) {
    if (error_.empty()) {
      error_ = "JSON error at byte " + std::to_string(p_ - begin_) + ": expected " + expected +
               (p_ == end_ ? " (the file ends there: truncated?)" : "");
    }
    return false;
  }
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return Fail(word);
    p_ += n;
    return true;
  }

  bool Value(JsonValue* out, int depth) {
    SkipSpace();
    if (p_ == end_) return Fail("a value");
    switch (*p_) {
      case '{': return Object(out, depth + 1);
      case '[': return Array(out, depth + 1);
      case '"': out->type = JsonValue::kString; return String(&out->str);
      case 't': out->type = JsonValue::kBool; out->boolean = true; return Literal("true");
      case 'f': out->type = JsonValue::kBool; out->boolean = false; return Literal("false");
      case 'n': out->type = JsonValue::kNull; return Literal("null");
      default: out->type = JsonValue::kNumber; return Number(out);
    }
  }

  bool Number(JsonValue* out) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    while (p_ < end_ && ((*p_ >= '0' && *p_ <= '9') || *p_ == '.' || *p_ == 'e' || *p_ == 'E' ||
                         *p_ == '+' || *p_ == '-')) {
      ++p_;
    }
    if (p_ == start || p_ - start > 40) return Fail("a value");
    char buf[48];
    std::memcpy(buf, start, p_ - start);
    buf[p_ - start] = '\0';
    char* stop = nullptr;
    out->number = std::strtod(buf, &stop);
    if (stop != buf + (p_ - start)) {
      p_ = start;
      return Fail("a number");
    }
    if (std::strpbrk(buf, ".eE") == nullptr) {
      errno = 0;
      out->integer = std::strtoll(buf, &stop, 10);
      out->is_integer = errno == 0 && stop == buf + (p_ - start);
    }
    return true;
  }

  static void AppendUtf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xc0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xe0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      *out += static_cast<char>(0xf0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool Hex4(unsigned* out) {
    if (end_ - p_ < 4) return Fail("4 hex digits");
    *out = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      char c = *p_;
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return Fail("4 hex digits");
      *out = *out * 16 + d;
    }
    return true;
  }

  bool Escape(std::string* out) {
    if (p_ == end_) return Fail("an escape");
    char c = *p_++;
    const char* from = "\"\\/bfnrt";
    const char* to = "\"\\/\b\f\n\r\t";
    if (const char* hit = c ? std::strchr(from, c) : nullptr) {
      *out += to[hit - from];
      return true;
    }
    if (c != 'u') return Fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    unsigned cp;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xd800 && cp < 0xdc00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
      const char* save = p_;
      p_ += 2;
      unsigned low;
      if (!Hex4(&low)) return false;
      if (low >= 0xdc00 && low < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
      } else {
        p_ = save;
      }
    }
    if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
    AppendUtf8(cp, out);
    return true;
  }

  bool String(std::string* out) {
    ++p_;  // the opening quote
    while (true) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      out->append(run, p_ - run);
      if (p_ == end_) return Fail("a closing quote");
      if (*p_ == '"') {
        ++p_;
        return true;
      }
      if (*p_ != '\\') return Fail("no control character in a string");
      ++p_;
      if (!Escape(out)) return false;
    }
  }

  bool Array(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return Fail("less nesting (at most 32 levels)");
    out->type = JsonValue::kArray;
    ++p_;
    SkipSpace();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    while (true) {
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
      } else if (p_ < end_ && *p_ == ']') {
        ++p_;
        return true;
      } else {
        return Fail("',' or ']'");
      }
    }
  }

  bool Object(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return Fail("less nesting (at most 32 levels)");
    out->type = JsonValue::kObject;
    ++p_;
    SkipSpace();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (p_ == end_ || *p_ != '"') return Fail("a member name in quotes");
      out->members.emplace_back();
      if (!String(&out->members.back().first)) return false;
      SkipSpace();
      if (p_ == end_ || *p_ != ':') return Fail("':'");
      ++p_;
      if (!Value(&out->members.back().second, depth)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
      } else if (p_ < end_ && *p_ == '}') {
        ++p_;
        return true;
      } else {
        return Fail("',' or '}'");
      }
    }
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  std::string error_;
};

}  // namespace

const JsonValue* JsonValue::Find(const char* key) const {
  for (const auto& m : members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

bool ParseJson(const std::string& text, JsonValue* out, std::string* error) {
  Parser parser(text);
  *out = JsonValue();
  if (parser.ParseDocument(out)) return true;
  *error = parser.error();
  return false;
}

}  // namespace stacktrace
}  // namespace xtimer

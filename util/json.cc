#include "util/json.h"

#include <cstdio>

namespace xtimer {
namespace {

void AppendEscape(unsigned unit, std::string* out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  *out += buf;
}

// The code point of the well-formed UTF-8 sequence at s[i] (no overlong form, no surrogate, at
// most U+10FFFF) and its length in *len; -1 when s[i] does not start one.
long DecodeUtf8(const std::string& s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return -1;
  long cp = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3f);
  }
  static const long kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return -1;
  *len = n;
  return cp;
}

}  // namespace

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      AppendEscape(c, &out);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      size_t len = 1;
      const long cp = DecodeUtf8(s, i, &len);
      if (cp < 0) {
        AppendEscape(0xfffd, &out);  // not UTF-8: the replacement character
      } else if (cp < 0x10000) {
        AppendEscape(static_cast<unsigned>(cp), &out);
      } else {
        AppendEscape(0xd800 + ((cp - 0x10000) >> 10), &out);
        AppendEscape(0xdc00 + ((cp - 0x10000) & 0x3ff), &out);
      }
      i += len - 1;
    }
  }
  return out + "\"";
}

}  // namespace xtimer

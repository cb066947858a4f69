#include "util/label.h"

namespace xtimer {

std::string SanitizeJobId(const std::string& raw) {
  std::string out = raw.substr(0, kMaxJobIdLength);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out == "." || out == "..") return "";
  return out;
}

std::string SanitizeLabelText(const std::string& raw) {
  std::string out = raw;
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '_';
  }
  return out;
}

}  // namespace xtimer

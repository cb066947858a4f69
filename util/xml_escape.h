// Text from untrusted input for XML, SVG and HTML documents (the flame graph of `xtimer stacks`,
// the report of `xtimer report`).
#ifndef XTIMER_UTIL_XML_ESCAPE_H_
#define XTIMER_UTIL_XML_ESCAPE_H_

#include <string>

namespace xtimer {

// True when `s` is valid UTF-8.
bool ValidUtf8(const std::string& s);

// `s` for element content and quoted attribute values: & < > " ' escaped, control characters
// (and, in text that is not UTF-8, bytes over 0x7f) shown as '?', so that any input gives a
// well-formed document and no markup.
std::string XmlEscape(const std::string& s);

}  // namespace xtimer

#endif  // XTIMER_UTIL_XML_ESCAPE_H_

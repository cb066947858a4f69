// JSON text helpers for the handwritten JSON that the control port and the test tools print.
#ifndef XTIMER_UTIL_JSON_H_
#define XTIMER_UTIL_JSON_H_

#include <string>

namespace xtimer {

// `s` as a JSON string literal, quotes included. The output is ASCII: '"' and '\' are escaped,
// and control characters and bytes >= 0x7f become \u00XX (so any byte string, even invalid UTF-8,
// gives valid JSON; non-ASCII text reads back as its Latin-1 bytes).
std::string JsonQuote(const std::string& s);

}  // namespace xtimer

#endif  // XTIMER_UTIL_JSON_H_

// JSON text helpers for the handwritten JSON that the control port and the test tools print.
#ifndef XTIMER_UTIL_JSON_H_
#define XTIMER_UTIL_JSON_H_

#include <string>

namespace xtimer {

// `s` as a JSON string literal, quotes included. The output is ASCII: '"' and '\' are escaped,
// control characters and DEL become \u00XX, and each well-formed UTF-8 character becomes its
// \uXXXX escape (a surrogate pair above U+FFFF), so UTF-8 text reads back byte for byte. A byte
// that does not start a well-formed UTF-8 character becomes \ufffd (the replacement character):
// any byte string gives valid JSON.
std::string JsonQuote(const std::string& s);

}  // namespace xtimer

#endif  // XTIMER_UTIL_JSON_H_

// libFuzzer target for the control port's HTTP/1.1 parser (daemon/export/http_request.h): the first
// byte sets the size of the pieces the rest is fed in. Checks the parser's promises: it never
// crashes, an error has one of the documented statuses and a reason, a complete request has
// exactly Content-Length body bytes within the limit.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "daemon/export/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kBody = 1024;
  if (size == 0) return 0;
  const size_t step = data[0] % 16 + 1;
  const char* p = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  using xtimer::daemon::HttpRequestParser;
  HttpRequestParser parser(256, kBody);
  for (size_t i = 0; i < n; i += step) parser.Feed(p + i, n - i < step ? n - i : step);
  if (parser.state() == HttpRequestParser::State::kError) {
    const int s = parser.error_status();
    if (s != 400 && s != 405 && s != 413 && s != 431 && s != 501 && s != 505) abort();
    if (parser.error_reason().empty()) abort();
  } else if (parser.state() == HttpRequestParser::State::kComplete) {
    const auto& r = parser.request();
    if (r.body.size() != r.content_length || r.content_length > kBody) abort();
    if (r.method != "GET" && r.method != "POST") abort();
    if (r.path.empty() || r.path[0] != '/') abort();
  }
  return 0;
}

// A strict, incremental HTTP/1.1 request parser for the control port (docs/control.md,
// "HTTP/1.1 requests"). Pure: no I/O. Feed it the bytes as they arrive; it says whether it needs
// more, has a complete request, or found an error (an HTTP status and a reason to send before
// closing the connection).
//
// Rules: the request line and every header line end with CRLF (a bare LF or CR is 400); the
// request line is `METHOD SP /target SP HTTP/1.0|HTTP/1.1` (other versions 505, a malformed line
// 400); only GET and POST (405 otherwise); the header block, request line and final blank line
// included, is at most max_header_bytes (431); header names are tokens followed directly by ':'
// (400 otherwise, folded lines too); Content-Length is decimal digits, given at most once (400),
// at most max_body_bytes (413); Transfer-Encoding is not supported (501); Host is optional.
#ifndef XTIMER_DAEMON_HTTP_REQUEST_H_
#define XTIMER_DAEMON_HTTP_REQUEST_H_

#include <cstddef>
#include <string>

namespace xtimer {
namespace daemon {

constexpr size_t kMaxHttpHeaderBytes = 16 * 1024;

struct HttpRequest {
  std::string method;   // GET or POST
  std::string target;   // as sent, starts with '/'
  std::string path;     // target without the query
  std::string version;  // HTTP/1.0 or HTTP/1.1
  bool expect_continue = false;
  size_t content_length = 0;
  std::string body;
};

class HttpRequestParser {
 public:
  enum class State { kNeedMore, kComplete, kError };

  HttpRequestParser(size_t max_header_bytes, size_t max_body_bytes);

  // Consumes bytes; once complete or in error, further bytes are ignored (each connection
  // carries one request). Returns the state after them.
  State Feed(const char* data, size_t n);
  State state() const { return state_; }
  // True once the header block is complete (the request line and headers are in request()).
  bool headers_done() const { return headers_done_; }
  const HttpRequest& request() const { return request_; }
  // For kError: the HTTP status to answer and why.
  int error_status() const { return error_status_; }
  const std::string& error_reason() const { return error_reason_; }

 private:
  State Fail(int status, std::string reason);
  State FeedHeader(const char* data, size_t n, size_t* used);
  State ParseHead();
  State ParseRequestLine(const std::string& line);
  State ParseHeaderLine(const std::string& line, bool* seen_length);

  const size_t max_header_bytes_;
  const size_t max_body_bytes_;
  State state_ = State::kNeedMore;
  bool headers_done_ = false;
  std::string head_;  // the header block so far, CRLFs included
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_reason_;
};

// The reason phrase of an HTTP status the daemon answers with ("Not Found", ...).
const char* HttpReason(int status);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_HTTP_REQUEST_H_

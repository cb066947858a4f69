#include "daemon/export/http_request.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace xtimer {
namespace daemon {
namespace {

// RFC 9110 tchar.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string TrimOws(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Printable for an error message: at most 64 bytes, control bytes as '?'.
std::string Quote(const std::string& s) {
  std::string out = s.substr(0, 64);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "'" + out + (s.size() > 64 ? "...'" : "'");
}

}  // namespace

HttpRequestParser::HttpRequestParser(size_t max_header_bytes, size_t max_body_bytes)
    : max_header_bytes_(max_header_bytes), max_body_bytes_(max_body_bytes) {}

HttpRequestParser::State HttpRequestParser::Fail(int status, std::string reason) {
  state_ = State::kError;
  error_status_ = status;
  error_reason_ = std::move(reason);
  return state_;
}

HttpRequestParser::State HttpRequestParser::Feed(const char* data, size_t n) {
  if (state_ != State::kNeedMore) return state_;
  if (!headers_done_) {
    size_t used = 0;
    if (FeedHeader(data, n, &used) != State::kNeedMore || !headers_done_) return state_;
    data += used;
    n -= used;
  }
  const size_t want = request_.content_length - request_.body.size();
  request_.body.append(data, n < want ? n : want);
  if (request_.body.size() == request_.content_length) state_ = State::kComplete;
  return state_;
}

// Appends header bytes up to the end of the block, checking line endings and the size as they
// come; *used: bytes taken from data.
HttpRequestParser::State HttpRequestParser::FeedHeader(const char* data, size_t n, size_t* used) {
  for (size_t i = 0; i < n; ++i) {
    const char c = data[i];
    const bool after_cr = !head_.empty() && head_.back() == '\r';
    if (c == '\n' && !after_cr) {
      return Fail(400, "bare LF line ending after " + std::to_string(head_.size()) +
                           " bytes: HTTP/1.1 request and header lines end with CRLF");
    }
    if (after_cr && c != '\n') {
      return Fail(400, "bare CR after " + std::to_string(head_.size() - 1) +
                           " bytes: HTTP/1.1 request and header lines end with CRLF");
    }
    if (head_.size() >= max_header_bytes_) {
      return Fail(431, "request line and headers larger than " +
                           std::to_string(max_header_bytes_) + " bytes");
    }
    head_.push_back(c);
    if (head_.size() >= 4 && head_.compare(head_.size() - 4, 4, "\r\n\r\n") == 0) {
      *used = i + 1;
      headers_done_ = true;
      return ParseHead();
    }
  }
  *used = n;
  return state_;
}

HttpRequestParser::State HttpRequestParser::ParseHead() {
  size_t pos = head_.find("\r\n");
  if (ParseRequestLine(head_.substr(0, pos)) != State::kNeedMore) return state_;
  bool seen_length = false;
  for (pos += 2; pos + 2 < head_.size();) {
    const size_t e = head_.find("\r\n", pos);
    if (ParseHeaderLine(head_.substr(pos, e - pos), &seen_length) != State::kNeedMore) {
      return state_;
    }
    pos = e + 2;
  }
  head_.clear();
  head_.shrink_to_fit();
  if (request_.content_length == 0) state_ = State::kComplete;
  return state_;
}

HttpRequestParser::State HttpRequestParser::ParseRequestLine(const std::string& line) {
  const size_t s1 = line.find(' ');
  const size_t s2 = s1 == std::string::npos ? s1 : line.find(' ', s1 + 1);
  if (s2 == std::string::npos || line.find(' ', s2 + 1) != std::string::npos || s1 == 0) {
    return Fail(400, "malformed request line " + Quote(line) +
                         ": expected 'METHOD /path HTTP/1.1'");
  }
  request_.method = line.substr(0, s1);
  request_.target = line.substr(s1 + 1, s2 - s1 - 1);
  request_.version = line.substr(s2 + 1);
  for (char c : request_.method) {
    if (!IsTokenChar(c)) return Fail(400, "malformed method " + Quote(request_.method));
  }
  if (request_.target.empty() || request_.target[0] != '/') {
    return Fail(400, "request target " + Quote(request_.target) + " must start with '/'");
  }
  for (char c : request_.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Fail(400, "control character in the request target " + Quote(request_.target));
    }
  }
  const std::string& v = request_.version;
  if (v.size() != 8 || v.compare(0, 5, "HTTP/") != 0 || v[6] != '.' || v[5] < '0' || v[5] > '9' ||
      v[7] < '0' || v[7] > '9') {
    return Fail(400, "malformed HTTP version " + Quote(v) + ": expected HTTP/1.1 or HTTP/1.0");
  }
  if (v != "HTTP/1.1" && v != "HTTP/1.0") {
    return Fail(505, "HTTP version " + Quote(v) + " is not supported: use HTTP/1.1 or HTTP/1.0");
  }
  if (request_.method != "GET" && request_.method != "POST") {
    return Fail(405, "method " + Quote(request_.method) + " is not allowed: use POST with a JSON "
                                                          "body (or GET)");
  }
  request_.path = request_.target.substr(0, request_.target.find('?'));
  return state_;
}

HttpRequestParser::State HttpRequestParser::ParseHeaderLine(const std::string& line,
                                                            bool* seen_length) {
  if (line[0] == ' ' || line[0] == '\t') {
    return Fail(400, "folded header line " + Quote(line) + " (obsolete line folding)");
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0) {
    return Fail(400, "malformed header line " + Quote(line) + ": expected 'Name: value'");
  }
  const std::string name = Lower(line.substr(0, colon));
  for (char c : name) {
    if (!IsTokenChar(c)) return Fail(400, "malformed header name " + Quote(line.substr(0, colon)));
  }
  const std::string value = TrimOws(line.substr(colon + 1));
  if (name == "transfer-encoding") {
    return Fail(501, "Transfer-Encoding " + Quote(value) +
                         " is not supported: send the body with Content-Length");
  }
  if (name == "content-length") {
    if (*seen_length) return Fail(400, "more than one Content-Length header");
    *seen_length = true;
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      return Fail(400, "bad Content-Length " + Quote(value) + ": expected decimal digits");
    }
    // Compare as digits: no overflow whatever the length.
    const std::string digits = value.substr(std::min(value.find_first_not_of('0'), value.size()));
    const std::string limit = std::to_string(max_body_bytes_);
    if (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit)) {
      return Fail(413, "request body of " + Quote(value) + " bytes is larger than the limit of " +
                           limit + " bytes");
    }
    request_.content_length = digits.empty() ? 0 : std::stoul(digits);
  } else if (name == "expect") {
    request_.expect_continue = Lower(value) == "100-continue";
  }
  return state_;
}

const char* HttpReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
  }
}

}  // namespace daemon
}  // namespace xtimer

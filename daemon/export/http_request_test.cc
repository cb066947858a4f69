// The control port's HTTP/1.1 parser: every malformed request in one table with its status,
// good requests, and the same requests fed one byte at a time.
#include "daemon/export/http_request.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace xtimer {
namespace daemon {
namespace {

constexpr size_t kBody = 64 * 1024;

struct Fed {
  HttpRequestParser::State state;
  int status;
  std::string reason;
  HttpRequest request;
};

// Feeds `bytes` in pieces of `step` bytes (0: all at once).
Fed Parse(const std::string& bytes, size_t step = 0) {
  HttpRequestParser p(kMaxHttpHeaderBytes, kBody);
  if (step == 0) step = bytes.size() + 1;
  for (size_t i = 0; i < bytes.size(); i += step) {
    p.Feed(bytes.data() + i, std::min(step, bytes.size() - i));
  }
  return {p.state(), p.error_status(), p.error_reason(), p.request()};
}

struct Case {
  const char* name;
  std::string bytes;
  int status;          // expected error status; 0: need more; 200: complete
  const char* reason;  // the reason contains this
};

const std::string kPost = "POST /HostingService/Status HTTP/1.1\r\n";

std::vector<Case> Cases() {
  const std::string pad(kMaxHttpHeaderBytes, 'a');
  return {
      {"bare LF everywhere", "POST /HostingService/Status HTTP/1.1\nHost: x\n\n", 400, "bare LF"},
      {"bare LF in a header", kPost + "Host: x\nContent-Length: 0\r\n\r\n", 400, "bare LF"},
      {"bare LF as the last line", kPost + "Host: x\r\n\n", 400, "bare LF"},
      {"bare CR", kPost + "Host: x\rY: z\r\n\r\n", 400, "bare CR"},
      {"two Content-Length", kPost + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400,
       "more than one Content-Length"},
      {"conflicting Content-Length", kPost + "Content-Length: 2\r\ncontent-length: 5\r\n\r\n{}",
       400, "more than one Content-Length"},
      {"Content-Length list", kPost + "Content-Length: 2, 2\r\n\r\n{}", 400, "bad Content-Length"},
      {"negative Content-Length", kPost + "Content-Length: -1\r\n\r\n", 400, "bad Content-Length"},
      {"non-numeric Content-Length", kPost + "Content-Length: ten\r\n\r\n", 400,
       "bad Content-Length"},
      {"hex Content-Length", kPost + "Content-Length: 0x10\r\n\r\n", 400, "bad Content-Length"},
      {"empty Content-Length", kPost + "Content-Length:\r\n\r\n", 400, "bad Content-Length"},
      {"Content-Length over the body limit", kPost + "Content-Length: 65537\r\n\r\n", 413,
       "larger than the limit of 65536"},
      {"Content-Length overflowing 64 bits",
       kPost + "Content-Length: 99999999999999999999999999\r\n\r\n", 413, "larger than the limit"},
      {"Transfer-Encoding chunked", kPost + "Transfer-Encoding: chunked\r\n\r\n", 501,
       "Transfer-Encoding"},
      {"Transfer-Encoding with Content-Length",
       kPost + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 501,
       "Transfer-Encoding"},
      {"header block over 16 KiB", kPost + "X-Pad: " + pad + "\r\n\r\n", 431, "16384"},
      {"header block over 16 KiB, unterminated", kPost + "X-Pad: " + pad, 431, "16384"},
      {"unknown method", "BREW /HostingService/Status HTTP/1.1\r\n\r\n", 405, "BREW"},
      {"DELETE", "DELETE /HostingService/Status HTTP/1.1\r\n\r\n", 405, "DELETE"},
      {"lower-case method", "post /HostingService/Status HTTP/1.1\r\n\r\n", 405, "post"},
      {"method with a bad byte", "PO(T /x HTTP/1.1\r\n\r\n", 400, "malformed method"},
      {"HTTP/2.0 as text", "POST /x HTTP/2.0\r\n\r\n", 505, "not supported"},
      {"HTTP/1.2", "POST /x HTTP/1.2\r\n\r\n", 505, "not supported"},
      {"no version", "POST /x\r\n\r\n", 400, "malformed request line"},
      {"garbage version", "POST /x HTTP/one\r\n\r\n", 400, "malformed HTTP version"},
      {"two spaces", "POST  /x HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"space in target", "POST /a b HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"absolute target", "POST http://x/y HTTP/1.1\r\n\r\n", 400, "must start with '/'"},
      {"empty request line", "\r\n\r\n", 400, "malformed request line"},
      {"header without colon", kPost + "Host x\r\n\r\n", 400, "malformed header line"},
      {"space before colon", kPost + "Host : x\r\n\r\n", 400, "malformed header name"},
      {"empty header name", kPost + ": x\r\n\r\n", 400, "malformed header line"},
      {"folded header", kPost + "X-A: 1\r\n  more\r\n\r\n", 400, "folded"},
      {"incomplete head", kPost + "Host: x\r\n", 0, ""},
      {"incomplete body", kPost + "Content-Length: 5\r\n\r\n{}", 0, ""},
      {"no Host, no body", kPost + "\r\n", 200, ""},
      {"HTTP/1.0", "GET /HostingService/Status HTTP/1.0\r\n\r\n", 200, ""},
      {"exactly 16 KiB of header",
       kPost + "X-Pad: " + std::string(kMaxHttpHeaderBytes - kPost.size() - 11, 'a') +
           "\r\n\r\n",
       200, ""},
      {"body at the limit", kPost + "Content-Length: 65536\r\n\r\n" + std::string(kBody, ' '), 200,
       ""},
      {"leading zeros", kPost + "Content-Length: 0002\r\n\r\n{}", 200, ""},
  };
}

TEST(HttpRequestParserTest, EveryCaseAllAtOnceAndByteByByte) {
  for (const Case& c : Cases()) {
    for (size_t step : {size_t{0}, size_t{1}, size_t{7}}) {
      SCOPED_TRACE(std::string(c.name) + ", step " + std::to_string(step));
      const Fed f = Parse(c.bytes, step);
      if (c.status == 0) {
        EXPECT_EQ(f.state, HttpRequestParser::State::kNeedMore) << f.reason;
      } else if (c.status == 200) {
        EXPECT_EQ(f.state, HttpRequestParser::State::kComplete) << f.reason;
      } else {
        ASSERT_EQ(f.state, HttpRequestParser::State::kError);
        EXPECT_EQ(f.status, c.status) << f.reason;
        EXPECT_NE(f.reason.find(c.reason), std::string::npos) << f.reason;
      }
    }
  }
}

TEST(HttpRequestParserTest, CompleteRequestFields) {
  const Fed f = Parse(
      "POST /HostingService/DumpKernelTrace?x=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
      "Content-Type: application/json\r\nexpect:  100-Continue \r\nContent-Length: 4\r\n\r\n"
      "{}{}trailing bytes are ignored");
  ASSERT_EQ(f.state, HttpRequestParser::State::kComplete) << f.reason;
  EXPECT_EQ(f.request.method, "POST");
  EXPECT_EQ(f.request.target, "/HostingService/DumpKernelTrace?x=1");
  EXPECT_EQ(f.request.path, "/HostingService/DumpKernelTrace");
  EXPECT_EQ(f.request.version, "HTTP/1.1");
  EXPECT_TRUE(f.request.expect_continue);
  EXPECT_EQ(f.request.content_length, 4u);
  EXPECT_EQ(f.request.body, "{}{}");
}

TEST(HttpRequestParserTest, HeadersDoneBeforeTheBodyAndBytesAfterAnErrorIgnored) {
  HttpRequestParser p(kMaxHttpHeaderBytes, kBody);
  const std::string head = kPost + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(p.Feed(head.data(), head.size()), HttpRequestParser::State::kNeedMore);
  EXPECT_TRUE(p.headers_done());
  EXPECT_TRUE(p.request().expect_continue);
  EXPECT_EQ(p.Feed("{}", 2), HttpRequestParser::State::kComplete);

  HttpRequestParser bad(kMaxHttpHeaderBytes, kBody);
  EXPECT_EQ(bad.Feed("GET /\n", 6), HttpRequestParser::State::kError);
  EXPECT_EQ(bad.Feed("\r\n\r\n", 4), HttpRequestParser::State::kError);
  EXPECT_EQ(bad.error_status(), 400);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer

// trace_summary TRACE.pftrace: decodes a trace written by `xtimer timeline` (trace_decoder.h) and
// prints it as one JSON object for tests written in other languages:
//   {"errors": [...], "compressed_packets": N, "primary_realtime": bool,
//    "processes": [{"uuid", "pid", "name", "labels": [...]}],
//    "threads": [{"uuid", "pid", "tid", "name"}],
//    "slices": [{"track", "ts", "dur", "name", "cat", "args": {...}, "flows": [...],
//                "terminating": [...]}],
//    "instants": [... same fields, dur 0 ...]}
// Flow ids are printed as decimal strings (they do not fit a JSON double). Exit 1 when the file
// cannot be read or the decoder found errors (they are printed too).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "timeline/trace_decoder.h"
#include "util/json.h"

namespace {

using xtimer::timeline::DecodedSlice;
using xtimer::JsonQuote;
using xtimer::timeline::DecodedTrace;

template <typename C, typename F>
std::string List(const C& c, F item) {
  std::string o = "[";
  for (const auto& x : c) o += (o.size() > 1 ? "," : "") + item(x);
  return o + "]";
}

std::string SliceJson(const DecodedSlice& s) {
  auto id = [](uint64_t v) { return JsonQuote(std::to_string(v)); };
  std::string args = "{";
  for (const auto& kv : s.args) {
    args += (args.size() > 1 ? "," : "") + JsonQuote(kv.first) + ":" + JsonQuote(kv.second);
  }
  args += "}";
  return "{\"track\":" + std::to_string(s.track) + ",\"ts\":" + std::to_string(s.ts) +
         ",\"dur\":" + std::to_string(s.dur) + ",\"name\":" + JsonQuote(s.name) +
         ",\"cat\":" + JsonQuote(s.category) + ",\"args\":" + args + ",\"flows\":" +
         List(s.flows, id) + ",\"terminating\":" + List(s.terminating, id) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(stderr, "usage: trace_summary TRACE.pftrace   (prints the trace as JSON)\n");
    return argc == 2 ? 0 : 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "trace_summary: cannot open %s\n", argv[1]);
    return 1;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DecodedTrace d = xtimer::timeline::DecodeTrace(bytes);
  std::string processes = "[", threads = "[";
  for (const auto& kv : d.tracks) {
    const auto& t = kv.second;
    if (t.has_process()) {
      processes += (processes.size() > 1 ? "," : "") + std::string("{\"uuid\":") +
                   std::to_string(kv.first) + ",\"pid\":" + std::to_string(t.process().pid()) +
                   ",\"name\":" + JsonQuote(t.process().process_name()) + ",\"labels\":" +
                   List(t.process().process_labels(), JsonQuote) + "}";
    } else if (t.has_thread()) {
      threads += (threads.size() > 1 ? "," : "") + std::string("{\"uuid\":") +
                 std::to_string(kv.first) + ",\"pid\":" + std::to_string(t.thread().pid()) +
                 ",\"tid\":" + std::to_string(t.thread().tid()) +
                 ",\"name\":" + JsonQuote(t.thread().thread_name()) + "}";
    }
  }
  std::printf("{\"errors\":%s,\"compressed_packets\":%d,\"primary_realtime\":%s,"
              "\"processes\":%s],\"threads\":%s],\"slices\":%s,\"instants\":%s}\n",
              List(d.errors, JsonQuote).c_str(), d.compressed_packets,
              d.primary_realtime ? "true" : "false", processes.c_str(), threads.c_str(),
              List(d.slices, SliceJson).c_str(), List(d.instants, SliceJson).c_str());
  for (const std::string& e : d.errors) std::fprintf(stderr, "trace_summary: %s\n", e.c_str());
  return d.errors.empty() ? 0 : 1;
}

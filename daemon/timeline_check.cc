// Reads timeline files with the project's reader (timeline/timeline_io.h) and prints one JSON
// line per file: ok, complete, error, events, identity, per-kind counts, communicators. For the
// end-to-end tests in Python. Exit status 1 if any file is not ok and complete.
#include <cstdio>
#include <map>
#include <string>

#include "timeline/timeline_io.h"
#include "util/json.h"

using xtimer::JsonQuote;

int main(int argc, char** argv) {
  int bad = 0;
  for (int i = 1; i < argc; ++i) {
    std::map<int, uint64_t> kinds;
    std::map<uint64_t, uint64_t> max_seq;  // collectives: comm -> largest seq
    xtimer::timeline::ReadResult r =
        xtimer::timeline::ReadTimeline(argv[i], [&](const xtimer::timeline::EventRecord& e) {
          ++kinds[e.kind];
          if (e.kind == 2 && e.comm_id != 0 && e.seq + 1 > max_seq[e.comm_id]) {
            max_seq[e.comm_id] = e.seq + 1;
          }
        });
    if (!r.ok || !r.complete) ++bad;
    const auto& m = r.metadata;
    std::string out = "{\"path\":" + JsonQuote(argv[i]) + ",\"ok\":" + (r.ok ? "true" : "false") +
                      ",\"complete\":" + (r.complete ? "true" : "false") +
                      ",\"error\":" + JsonQuote(r.error) +
                      ",\"events\":" + std::to_string(r.events) +
                      ",\"job\":" + JsonQuote(m.job) + ",\"node\":" + JsonQuote(m.node) +
                      ",\"rank\":" + std::to_string(m.rank) +
                      ",\"world\":" + std::to_string(m.world_size) +
                      ",\"pid\":" + std::to_string(m.pid) +
                      ",\"strings\":" + std::to_string(m.strings.size()) + ",\"kinds\":{";
    bool first = true;
    for (const auto& k : kinds) {
      out += (first ? "\"" : ",\"") + std::to_string(k.first) + "\":" + std::to_string(k.second);
      first = false;
    }
    out += "},\"comms\":[";
    first = true;
    for (const auto& c : m.comms) {
      out += std::string(first ? "" : ",") + "{\"id\":\"" + std::to_string(c.id) +
             "\",\"parent\":\"" + std::to_string(c.parent_id) +
             "\",\"size\":" + std::to_string(c.size) + ",\"rank\":" + std::to_string(c.rank) +
             ",\"members\":[";
      for (size_t j = 0; j < c.members.size(); ++j) {
        out += (j ? "," : "") + std::to_string(c.members[j]);
      }
      out += "]}";
      first = false;
    }
    out += "],\"collective_seq_end\":{";
    first = true;
    for (const auto& s : max_seq) {
      out += (first ? "\"" : ",\"") + std::to_string(s.first) + "\":" + std::to_string(s.second);
      first = false;
    }
    out += "}}";
    printf("%s\n", out.c_str());
  }
  return bad ? 1 : 0;
}

#include "stacktrace/summary.h"

#include "util/json.h"

namespace xtimer {
namespace stacktrace {

std::string RankCount(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankRanges(ranks) + " (" +
         std::to_string(ranks.size()) + ")";
}

std::string TopFrames(const StackTree& tree, const RankGroup& group, int top) {
  if (group.frames.empty()) return "no stack (" + group.error + ")";
  std::string out;
  int named = 0;
  bool python = false;
  size_t i = 0;
  for (; i < group.frames.size() && named < top; ++i) {
    const Frame& f = tree.frames()[group.frames[i]];
    if (OriginOf(f) == Origin::kInterpreter) continue;  // says nothing about where the rank is
    out += (named++ ? " <- " : "") + FrameLabel(f);
    python = python || f.kind == Frame::kPython;
  }
  if (!named) return FrameLabel(tree.frames()[group.frames[0]]);
  // A rank in a native call made from Python: its innermost Python frame says which call.
  for (; !python && i < group.frames.size(); ++i) {
    const Frame& f = tree.frames()[group.frames[i]];
    if (f.kind == Frame::kPython) return out + " <- ... <- " + FrameLabel(f);
  }
  return out;
}

std::string SummaryText(const SummaryInput& in) {
  std::vector<RankGroup> groups = in.tree->GroupRanks();
  const std::vector<int32_t>& ranks = in.tree->ranks();
  std::string out = "xtimer stacks: " + std::to_string(ranks.size()) + " ranks";
  if (in.world_size > 0) out += " of a world of " + std::to_string(in.world_size);
  out += ", " + std::to_string(groups.size()) + (groups.size() == 1 ? " stack" : " stacks") +
         " (main thread of each rank)\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += RankCount(groups[g].ranks) + " in " + TopFrames(*in.tree, groups[g], in.top_frames);
    if (g > 0) {
      std::string note = in.describe ? in.describe(groups[g].ranks) : "";
      out += "   [outlier" + (note.empty() ? "" : "; " + note) + "]";
    }
    out += "\n";
  }
  if (!in.missing_ranks.empty()) {
    out += "missing: " + RankCount(in.missing_ranks) + " have no readable stack file\n";
  }
  for (const std::string& p : in.problems) out += "skipped: " + p + "\n";
  return out;
}

namespace {

std::string JsonRanks(const std::vector<int32_t>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out + "]";
}

std::string GroupJson(const SummaryInput& in, const RankGroup& g, bool outlier) {
  std::string out = "{\"ranks\": " + JsonRanks(g.ranks) + ", \"rank_ranges\": " +
                    JsonQuote(RankRanges(g.ranks)) + ", \"count\": " +
                    std::to_string(g.ranks.size()) + ", \"outlier\": " +
                    (outlier ? "true" : "false") + ", \"thread\": " + JsonQuote(g.thread);
  if (!g.error.empty()) out += ", \"error\": " + JsonQuote(g.error);
  if (outlier && in.describe) out += ", \"note\": " + JsonQuote(in.describe(g.ranks));
  out += ", \"frames\": [";
  for (size_t i = 0; i < g.frames.size(); ++i) {
    const Frame& f = in.tree->frames()[g.frames[i]];
    out += std::string(i ? ", " : "") + "{\"kind\": \"" + KindName(f.kind) +
           "\", \"function\": " + JsonQuote(f.function) + ", \"module\": " + JsonQuote(f.module) +
           ", \"line\": " + std::to_string(f.line) +
           (f.file.empty() ? "" : ", \"file\": " + JsonQuote(f.file)) + "}";
  }
  return out + "]}";
}

}  // namespace

std::string SummaryJson(const SummaryInput& in) {
  std::vector<RankGroup> groups = in.tree->GroupRanks();
  std::string out = "{\"format\": \"xtimer-stacks-summary\", \"version\": 1, \"ranks\": " +
                    std::to_string(in.tree->ranks().size()) +
                    ", \"world_size\": " + std::to_string(in.world_size) +
                    ", \"missing_ranks\": " + JsonRanks(in.missing_ranks) + ", \"problems\": [";
  for (size_t i = 0; i < in.problems.size(); ++i) {
    out += (i ? ", " : "") + JsonQuote(in.problems[i]);
  }
  out += "],\n \"groups\": [";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += (g ? ",\n  " : "\n  ") + GroupJson(in, groups[g], g > 0);
  }
  return out + "]}\n";
}

}  // namespace stacktrace
}  // namespace xtimer

#include "stacktrace/summary.h"

#include <algorithm>

#include "stacktrace/cxx_name.h"
#include "stacktrace/frame_owner.h"
#include "util/json.h"

namespace xtimer {
namespace stacktrace {

std::string RankCount(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankRanges(ranks) + " (" +
         std::to_string(ranks.size()) + ")";
}

namespace {

// A frame's label with fewer words: the parameter list, qualifiers and return type of a C++
// function are dropped, template arguments become <...>, "(anonymous namespace)::" goes.
std::string ShortLabel(const Frame& f) {
  if (f.kind != Frame::kNative || f.function.empty()) return FrameLabel(f);
  Frame shorter = f;
  shorter.function = ShortFunctionName(f.function);
  return FrameLabel(shorter);
}

// A stack with no frame of the application's: its innermost `top` frames that are not the
// interpreter's; when those are all native and Python frames lie further out, the innermost
// Python frame follows after "<- ... <-".
std::string InnermostFrames(const std::vector<Frame>& table, const std::vector<uint32_t>& stack,
                            int top) {
  std::string out;
  int named = 0;
  bool python = false;
  size_t i = 0;
  for (; i < stack.size() && named < top; ++i) {
    const Frame& f = table[stack[i]];
    if (OwnerOf(f) == Owner::kInterpreter) continue;  // says nothing about where the rank is
    out += (named++ ? " <- " : "") + ShortLabel(f);
    python = python || f.kind == Frame::kPython;
  }
  if (!named) return ShortLabel(table[stack[0]]);
  for (; !python && i < stack.size(); ++i) {
    const Frame& f = table[stack[i]];
    if (f.kind == Frame::kPython) return out + " <- ... <- " + FrameLabel(f);
  }
  return out;
}

// The application's frames from stack[app] outward, at most `top`; when those are all native
// and a Python frame of the application's lies further out (a native extension called from
// Python), the innermost such frame follows after "<- ... <-".
std::string ApplicationFrames(const std::vector<Frame>& table,
                              const std::vector<uint32_t>& stack, size_t app, int top) {
  std::string out;
  int named = 0;
  bool python = false;
  size_t i = app;
  for (; i < stack.size() && named < top; ++i) {
    const Frame& f = table[stack[i]];
    if (!IsApplicationFrame(f)) continue;
    out += (named++ ? " <- " : "") + ShortLabel(f);
    python = python || f.kind == Frame::kPython;
  }
  for (; !python && i < stack.size(); ++i) {
    const Frame& f = table[stack[i]];
    if (f.kind == Frame::kPython && IsApplicationFrame(f)) {
      return out + " <- ... <- " + FrameLabel(f);
    }
  }
  return out;
}

// What the application's frame is in: the named frames inward of stack[app] that are not the
// interpreter's, innermost first; of more than `top`, the innermost top - 1, "<- ... <-" and
// the outermost (the call the application made). "" when the application's frame is innermost.
std::string ViaFrames(const std::vector<Frame>& table, const std::vector<uint32_t>& stack,
                      size_t app, int top) {
  std::vector<const Frame*> via;
  for (size_t i = 0; i < app; ++i) {
    const Frame& f = table[stack[i]];
    if (!f.function.empty() && OwnerOf(f) != Owner::kInterpreter) via.push_back(&f);
  }
  std::string out;
  const size_t shown = via.size() <= static_cast<size_t>(top) ? via.size() : top - 1;
  for (size_t i = 0; i < shown; ++i) out += (i ? " <- " : "") + ShortLabel(*via[i]);
  if (shown < via.size()) out += (shown ? " <- ... <- " : "... <- ") + ShortLabel(*via.back());
  return out;
}

// The members below kFirstProcessMember: the ranks (merge.h).
std::vector<int32_t> RanksOf(const std::vector<int32_t>& members) {
  return {members.begin(), std::lower_bound(members.begin(), members.end(), kFirstProcessMember)};
}

// in.describe of a group's ranks ("" for a group of processes without a rank).
std::string Describe(const SummaryInput& in, const std::vector<int32_t>& members) {
  const std::vector<int32_t> ranks = RanksOf(members);
  return in.describe && !ranks.empty() ? in.describe(ranks) : "";
}

}  // namespace

int InnermostApplicationFrame(const std::vector<Frame>& table,
                              const std::vector<uint32_t>& stack) {
  for (size_t i = 0; i < stack.size(); ++i) {
    if (IsApplicationFrame(table[stack[i]])) return static_cast<int>(i);
  }
  return -1;
}

std::string TopFrames(const StackTree& tree, const RankGroup& group, int top) {
  if (group.frames.empty()) return "no stack (" + group.error + ")";
  const int app = InnermostApplicationFrame(tree.frames(), group.frames);
  if (app < 0) return InnermostFrames(tree.frames(), group.frames, top);
  const std::string via = ViaFrames(tree.frames(), group.frames, app, top);
  return ApplicationFrames(tree.frames(), group.frames, app, top) +
         (via.empty() ? "" : " via " + via);
}

namespace {

// Lines appended while they fit in `max` bytes (less room for the closing line).
struct Bounded {
  std::string out;
  size_t max;
  size_t left_out = 0;
  bool Add(const std::string& line) {
    if (left_out > 0 || out.size() + line.size() + 256 > max) return ++left_out, false;
    out += line;
    return true;
  }
};

}  // namespace

std::string SummaryText(const SummaryInput& in) {
  std::vector<RankGroup> groups = in.tree->GroupRanks();
  const std::vector<int32_t>& members = in.tree->ranks();
  const size_t ranks = RanksOf(members).size(), processes = members.size() - ranks;
  std::string out = "xtimer stacks: " + std::to_string(ranks) + " ranks";
  if (in.world_size > 0) out += " of a world of " + std::to_string(in.world_size);
  if (processes > 0) {
    out = (ranks > 0 ? out + " and " : "xtimer stacks: ") + std::to_string(processes) +
          (processes == 1 ? " process" : " processes") + " without a rank";
  }
  out += ", " + std::to_string(groups.size()) + (groups.size() == 1 ? " stack" : " stacks") +
         " (main thread of each " + (processes > 0 ? "process" : "rank") + ")\n";
  Bounded text{std::move(out), in.max_bytes};
  for (size_t g = 0; g < groups.size() && text.left_out == 0; ++g) {
    std::string line = in.tree->Members(groups[g].ranks) + " (" +
                       std::to_string(groups[g].ranks.size()) + ") in " +
                       TopFrames(*in.tree, groups[g], in.top_frames);
    if (g > 0) {
      std::string note = Describe(in, groups[g].ranks);
      line += "   [outlier" + (note.empty() ? "" : "; " + note) + "]";
    }
    if (!text.Add(line + "\n")) text.left_out = groups.size() - g;
  }
  const size_t groups_left_out = text.left_out;
  if (!in.missing_ranks.empty()) {
    text.Add("missing: " + RankCount(in.missing_ranks) + " have no readable stack file\n");
  }
  for (const std::string& p : in.problems) text.Add("skipped: " + p + "\n");
  if (text.left_out > 0) {
    text.out += "... " + std::to_string(groups_left_out) + " more stacks and " +
                std::to_string(text.left_out - groups_left_out) +
                " more lines left out: the summary's limit is " +
                std::to_string(in.max_bytes >> 20) + " MiB\n";
  }
  return std::move(text.out);
}

namespace {

std::string JsonRanks(const std::vector<int32_t>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out + "]";
}

std::string GroupJson(const SummaryInput& in, const RankGroup& g, bool outlier) {
  const std::vector<int32_t> ranks = RanksOf(g.ranks);
  std::string out = "{\"ranks\": " + JsonRanks(ranks) + ", \"rank_ranges\": " +
                    JsonQuote(RankRanges(ranks)) + ", \"count\": " +
                    std::to_string(g.ranks.size()) + ", \"outlier\": " +
                    (outlier ? "true" : "false") + ", \"thread\": " + JsonQuote(g.thread);
  if (ranks.size() < g.ranks.size()) {  // processes whose rank is not known, by name
    out += ", \"processes\": [";
    for (size_t i = ranks.size(); i < g.ranks.size(); ++i) {
      out += (i > ranks.size() ? ", " : "") + JsonQuote(in.tree->ProcessName(g.ranks[i]));
    }
    out += "]";
  }
  if (!g.error.empty()) out += ", \"error\": " + JsonQuote(g.error);
  if (outlier && in.describe) out += ", \"note\": " + JsonQuote(Describe(in, g.ranks));
  out += ", \"app_frame\": " +
         std::to_string(InnermostApplicationFrame(in.tree->frames(), g.frames));
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
  const size_t max = in.max_bytes > 512 ? in.max_bytes - 512 : 0;  // room for the tail
  std::vector<RankGroup> groups = in.tree->GroupRanks();
  const size_t ranks = RanksOf(in.tree->ranks()).size();
  std::string out = "{\"format\": \"xtimer-stacks-summary\", \"version\": 1, \"ranks\": " +
                    std::to_string(ranks) + ", \"processes\": " +
                    std::to_string(in.tree->ranks().size() - ranks) +
                    ", \"world_size\": " + std::to_string(in.world_size) +
                    ", \"missing_ranks\": " + JsonRanks(in.missing_ranks) + ", \"problems\": [";
  size_t problems = 0;
  for (; problems < in.problems.size(); ++problems) {
    const std::string p = (problems ? ", " : "") + JsonQuote(in.problems[problems]);
    if (out.size() + p.size() > max / 2) break;  // half for the groups
    out += p;
  }
  out += "],\n \"groups\": [";
  size_t g = 0;
  for (; g < groups.size(); ++g) {
    const std::string group = (g ? ",\n  " : "\n  ") + GroupJson(in, groups[g], g > 0);
    if (out.size() + group.size() > max) break;
    out += group;
  }
  out += "]";
  if (problems < in.problems.size()) {
    out += ", \"problems_left_out\": " + std::to_string(in.problems.size() - problems);
  }
  if (g < groups.size()) out += ", \"groups_left_out\": " + std::to_string(groups.size() - g);
  return out + "}\n";
}

}  // namespace stacktrace
}  // namespace xtimer

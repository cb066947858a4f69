#include "stacktrace/flamegraph_svg.h"

#include <algorithm>
#include <cstdio>

#include "util/xml_escape.h"

namespace xtimer {
namespace stacktrace {
namespace {

constexpr double kWidth = 1200, kPad = 10, kRow = 16, kTop = 50;

const char* Fill(Origin o, size_t hash) {
  static const char* kColors[][3] = {
      {"#6cc46c", "#58b858", "#7fd07f"},  // python: green
      {"#e0c64a", "#d6b93a", "#ebd36a"},  // interpreter: yellow
      {"#e8684a", "#dc5a3c", "#f07a5c"},  // nccl/cuda: red
      {"#7aa6dc", "#6898d4", "#8cb4e4"},  // native: blue
      {"#b8b8b8", "#b8b8b8", "#b8b8b8"},  // thread: grey
      {"#d070d0", "#d070d0", "#d070d0"},  // error: magenta
      {"#c89058", "#bc8448", "#d49c68"},  // xtimer: brown (shown with --show-xtimer)
  };
  return kColors[static_cast<int>(o)][hash % 3];
}

const char* OriginName(Origin o) {
  static const char* kNames[] = {"python", "interpreter", "nccl/cuda", "native", "thread", "error",
                                "xtimer"};
  return kNames[static_cast<int>(o)];
}

std::string Tooltip(const StackTree& tree, uint32_t id) {
  const Node& n = tree.nodes()[id];
  int64_t width = tree.Width(id);
  if (id == 0) return "all: " + std::to_string(width) + " rank-threads, " + tree.Members(n.ranks);
  const Frame& f = tree.frames()[n.frame];
  std::string t = f.kind == Frame::kThread ? "thread " + f.function
                  : f.kind == Frame::kError ? "no stack: " + f.function
                                           : (f.function.empty() ? "??" : f.function);
  if (!f.module.empty()) t += "\nmodule: " + f.module;
  if (!f.file.empty()) t += "\nfile: " + f.file;
  if (f.line > 0) t += "\nline: " + std::to_string(f.line);
  t += std::string("\norigin: ") + OriginName(OriginOf(f));
  if (tree.HasProcesses()) {  // processes whose rank is not known are named, not numbered
    return t + "\n" + tree.Members(n.ranks) + " (" + std::to_string(width) + ")";
  }
  return t + "\n" + std::to_string(width) + (width == 1 ? " rank: " : " ranks: ") +
         RankRanges(n.ranks);
}

struct Layout {
  const StackTree& tree;
  double px_per_unit;
  int max_depth;
  size_t max_bytes;  // for the frames: the document's limit less its head and tail
  std::string* out;
  OutputCut cut;
  bool full = false;

  void Draw(uint32_t id, double x_units) {
    const Node& n = tree.nodes()[id];
    int64_t w = tree.Width(id);
    double x = kPad + x_units * px_per_unit, width = w * px_per_unit;
    if (width < 0.1 || full) return;
    const size_t mark = out->size();
    double y = kTop + (max_depth - n.depth) * kRow;
    const Frame* f = id == 0 ? nullptr : &tree.frames()[n.frame];
    std::string label = f ? FrameLabel(*f) : "all";
    Origin origin = f ? OriginOf(*f) : Origin::kThread;
    char head[256];
    std::snprintf(head, sizeof head,
                  "<g class=\"f\" data-x=\"%.0f\" data-w=\"%lld\" data-d=\"%d\"><title>", x_units,
                  static_cast<long long>(w), n.depth);
    *out += head;
    *out += XmlEscape(Tooltip(tree, id)) + "</title>";
    char rect[256];
    std::snprintf(rect, sizeof rect,
                  "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" "
                  "rx=\"2\"/><text x=\"%.2f\" y=\"%.0f\">",
                  x, y, std::max(width - 0.5, 0.1), kRow - 1,
                  Fill(origin, std::hash<std::string>()(label)), x + 3, y + kRow - 4);
    *out += rect;
    size_t fit = width > 10 ? static_cast<size_t>((width - 6) / 7) : 0;
    std::string shown = label.size() <= fit ? label : fit > 2 ? label.substr(0, fit - 2) + ".." : "";
    *out += XmlEscape(shown) + "</text><desc>" + XmlEscape(label) + "</desc></g>\n";
    if (out->size() > max_bytes) {  // this frame did not fit: it and the rest are left out
      out->resize(mark);
      full = true;
      return;
    }
    ++cut.written;
    std::vector<uint32_t> kids = n.children;
    std::stable_sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      return tree.Width(a) > tree.Width(b);
    });
    double cx = x_units;
    for (uint32_t c : kids) {
      Draw(c, cx);
      cx += tree.Width(c);
    }
  }
};

// Click a frame to zoom to it (its ancestors stay full width), "Reset zoom" to undo; "Search"
// asks for a substring, or the URL's fragment #search=TEXT gives one (on load and when it
// changes; it needs no prompt, so headless browsers and links use it), and one search() paints
// the matching frames purple and writes how many matched; the prompt puts its text in the URL.
constexpr char kScript[] = R"JS(<script type="text/ecmascript"><![CDATA[
var W = 1200, PAD = 10, frames = document.querySelectorAll("g.f");
function num(g, k) { return parseFloat(g.getAttribute("data-" + k)); }
function fit(g, x, w) {
  var r = g.querySelector("rect"), t = g.querySelector("text");
  var label = g.querySelector("desc").textContent;
  if (w < 0.1) { g.style.display = "none"; return; }
  g.style.display = "";
  r.setAttribute("x", x); r.setAttribute("width", Math.max(w - 0.5, 0.1));
  t.setAttribute("x", x + 3);
  var n = w > 10 ? Math.floor((w - 6) / 7) : 0;
  t.textContent = label.length <= n ? label : (n > 2 ? label.substr(0, n - 2) + ".." : "");
}
function zoom(target) {
  var x0 = num(target, "x"), w0 = num(target, "w"), d0 = num(target, "d");
  var scale = (W - 2 * PAD) / w0;
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i], x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
    if (d < d0) { fit(g, PAD, W - 2 * PAD); continue; }
    if (x >= x0 && x + w <= x0 + w0) fit(g, PAD + (x - x0) * scale, w * scale);
    else fit(g, 0, 0);
  }
  document.getElementById("unzoom").style.opacity = 1;
}
function unzoom() { zoom(frames[0]); document.getElementById("unzoom").style.opacity = 0.3; }
// The one search: the "Search" prompt and the URL fragment #search=TEXT both call it.
function search(term) {
  var hits = 0;
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i], r = g.querySelector("rect");
    if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
    var hit = term !== "" && g.querySelector("desc").textContent.indexOf(term) >= 0;
    r.setAttribute("fill", hit ? "#a050e0" : r.getAttribute("data-fill"));
    if (hit) hits++;
  }
  document.getElementById("matched").textContent = term === "" ? "" :
      "matched " + hits + (hits === 1 ? " frame" : " frames") + " for \"" + term + "\"";
}
function ask() {
  var term = prompt("Search frames (substring of the label; empty clears):", "");
  if (term === null) return;
  search(term);
  var url = location.href.split("#")[0];
  try { history.replaceState(null, "", term === "" ? url : url + "#search=" +
                            encodeURIComponent(term)); } catch (e) {}
}
function searchFromUrl(clear) {
  var m = /^#search=(.*)$/.exec(location.hash);
  if (!m) { if (clear) search(""); return; }
  var term = m[1];
  try { term = decodeURIComponent(term); } catch (e) {}
  search(term);
}
for (var i = 0; i < frames.length; i++)
  frames[i].addEventListener("click", function(e) { zoom(e.currentTarget); });
window.addEventListener("hashchange", function() { searchFromUrl(true); });
searchFromUrl(false);
]]></script>
)JS";

int MaxDepth(const StackTree& tree) {
  int d = 0;
  for (const Node& n : tree.nodes()) d = std::max(d, n.depth);
  return d;
}

}  // namespace

std::string FlameGraphSvg(const StackTree& tree, const std::string& title, size_t max_bytes,
                          OutputCut* cut) {
  int depth = MaxDepth(tree);
  double height = kTop + (depth + 1) * kRow + 2 * kPad;
  int64_t total = std::max<int64_t>(tree.Width(0), 1);
  char head[1024];
  std::snprintf(head, sizeof head,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
                "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
                "<style>text { font-family: monospace; font-size: 11px; fill: #000; } "
                "g.f { cursor: pointer; } g.f:hover rect { stroke: #000; stroke-width: 0.5; } "
                "desc { display: none; } .ui { font-size: 13px; cursor: pointer; }</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafaf4\"/>\n",
                kWidth, height, kWidth, height);
  std::string out = head;
  out += "<text x=\"600\" y=\"20\" text-anchor=\"middle\" style=\"font-size:15px\">" +
         XmlEscape(title) + "</text>\n";
  out += "<text id=\"unzoom\" class=\"ui\" x=\"10\" y=\"40\" style=\"opacity:0.3\" "
         "onclick=\"unzoom()\">Reset zoom</text>\n"
         "<text id=\"search\" class=\"ui\" x=\"1110\" y=\"40\" onclick=\"ask()\">Search</text>\n"
         "<text id=\"matched\" class=\"ui\" x=\"700\" y=\"40\"></text>\n";
  constexpr size_t kNote = 256;  // room for the note that the graph was cut
  constexpr char kEnd[] = "</svg>\n";
  const size_t tail = (sizeof(kScript) - 1) + (sizeof(kEnd) - 1) + kNote;
  Layout layout{tree, (kWidth - 2 * kPad) / static_cast<double>(total), depth,
                max_bytes > out.size() + tail ? max_bytes - tail : out.size(), &out, {}};
  layout.Draw(0, 0);
  if (layout.full) {
    layout.cut.left_out = tree.nodes().size() - layout.cut.written;
    char note[kNote];
    std::snprintf(note, sizeof note,
                  "<text class=\"ui\" x=\"10\" y=\"20\" fill=\"#c00\">cut at %zu MiB (the "
                  "limit): %zu frames drawn</text>\n",
                  max_bytes >> 20, layout.cut.written);
    out += note;
  }
  if (cut != nullptr) *cut = layout.cut;
  out += kScript;
  return out + kEnd;
}

}  // namespace stacktrace
}  // namespace xtimer

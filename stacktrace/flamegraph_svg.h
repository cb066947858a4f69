// A self-contained SVG flame graph of a merged StackTree (docs/stacks.md "stacks.svg"): one
// rectangle per node, its width proportional to the node's rank count, the root at the bottom;
// a <title> per frame with function, module, line, rank count and rank ranges; colours by
// origin; click-to-zoom and search by inline JavaScript. No external scripts, fonts or network.
#ifndef XTIMER_STACKTRACE_FLAMEGRAPH_SVG_H_
#define XTIMER_STACKTRACE_FLAMEGRAPH_SVG_H_

#include <string>

#include "stacktrace/merge.h"

namespace xtimer {
namespace stacktrace {

// The SVG document; `title` heads it (e.g. the job and the rank count). Nodes narrower than
// 0.1 pixel at full width are left out (their parent's width still counts them). At most
// `max_bytes`: frames are drawn depth first, widest first, until the next one does not fit; the
// graph then says it was cut, and *cut (when given) counts the frames drawn and the tree's
// nodes left out.
std::string FlameGraphSvg(const StackTree& tree, const std::string& title,
                          size_t max_bytes = kMaxSvgBytes, OutputCut* cut = nullptr);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_FLAMEGRAPH_SVG_H_

#include "util/parallel_groups.h"

#include <algorithm>
#include <cstdlib>

namespace xtimer {

const char* const kParallelDimNames[kParallelDims] = {"tp", "cp", "ep", "dp", "pp"};

namespace {

int* DimOf(ParallelGroups* g, int dim) {
  int* dims[kParallelDims] = {&g->tp, &g->cp, &g->ep, &g->dp, &g->pp};
  return dims[dim];
}

// The dimension a part of the text names ("tp2" -> 0), or -1.
int DimNamed(const std::string& part) {
  for (int i = 0; i < kParallelDims && part.size() >= 2; ++i) {
    if (part.compare(0, 2, kParallelDimNames[i]) == 0) return i;
  }
  return -1;
}

}  // namespace

int ParallelDimSize(const ParallelGroups& g, int dim) {
  const int sizes[kParallelDims] = {g.tp, g.cp, g.ep, g.dp, g.pp};
  return sizes[dim];
}

void ParallelCoordinates(const ParallelGroups& g, int32_t rank, int out[kParallelDims]) {
  for (int i = 0; i < kParallelDims; ++i) {
    const int n = std::max(ParallelDimSize(g, i), 1);
    out[i] = rank % n;
    rank /= n;
  }
}

std::string ParallelLabel(const ParallelGroups& g, int32_t rank) {
  int c[kParallelDims];
  ParallelCoordinates(g, rank, c);
  std::string label;
  for (int i = kParallelDims - 1; i >= 0; --i) {
    if (ParallelDimSize(g, i) == 1) continue;
    if (!label.empty()) label += ' ';
    label += kParallelDimNames[i] + std::to_string(c[i]);
  }
  return label;
}

bool ParseParallelGroups(const std::string& text, ParallelGroups* groups, std::string* error) {
  if (text.empty()) {
    *error = "empty group layout: expected e.g. tp2-pp2-dp2";
    return false;
  }
  ParallelGroups parsed;
  bool seen[kParallelDims] = {};
  size_t pos = 0;
  while (true) {
    const size_t dash = text.find('-', pos);
    const std::string part =
        text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    const int dim = DimNamed(part);
    if (dim < 0) {
      *error = "unknown group '" + part + "' in '" + text +
               "': expected tp, cp, ep, dp or pp and a size, e.g. tp2";
      return false;
    }
    if (seen[dim]) {
      *error = "group '" + std::string(kParallelDimNames[dim]) + "' given twice in '" + text + "'";
      return false;
    }
    seen[dim] = true;
    const std::string num = part.substr(2);
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos ||
        std::atoi(num.c_str()) < 1) {
      *error = "bad size '" + num + "' for group '" + kParallelDimNames[dim] + "' in '" + text +
               "': expected a whole number from 1 to 999999";
      return false;
    }
    *DimOf(&parsed, dim) = std::atoi(num.c_str());
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  if (static_cast<int64_t>(parsed.tp) * parsed.cp * parsed.ep * parsed.dp * parsed.pp > (1 << 24)) {
    *error = "group layout '" + text + "' has more than 16777216 ranks";
    return false;
  }
  *groups = parsed;
  return true;
}

}  // namespace xtimer

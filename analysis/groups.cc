// Parallel groups in Megatron's layout: tp innermost, then cp, ep, dp, pp.
#include <algorithm>
#include <cstdlib>

#include "analysis/analysis.h"

namespace xtimer {
namespace analysis {
namespace {

constexpr int kDims = 5;
constexpr const char* kNames[kDims] = {"tp", "cp", "ep", "dp", "pp"};  // innermost first

int* DimOf(Groups* g, int i) {
  int* dims[kDims] = {&g->tp, &g->cp, &g->ep, &g->dp, &g->pp};
  return dims[i];
}

int SizeOf(const Groups& g, int i) {
  const int sizes[kDims] = {g.tp, g.cp, g.ep, g.dp, g.pp};
  return sizes[i];
}

// The rank's coordinate in each dimension, innermost first.
void Coordinates(const Groups& g, int32_t rank, int out[kDims]) {
  for (int i = 0; i < kDims; ++i) {
    int n = std::max(SizeOf(g, i), 1);
    out[i] = rank % n;
    rank /= n;
  }
}

}  // namespace

bool ParseGroups(const std::string& text, Groups* groups, std::string* error) {
  Groups parsed;
  bool seen[kDims] = {};
  if (text.empty()) {
    *error = "empty group layout: expected e.g. tp2-pp2-dp2";
    return false;
  }
  size_t pos = 0;
  while (true) {
    size_t dash = text.find('-', pos);
    std::string part = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    int dim = -1;
    for (int i = 0; i < kDims && part.size() >= 2; ++i) {
      if (part.compare(0, 2, kNames[i]) == 0) dim = i;
    }
    if (dim < 0) {
      *error = "bad group '" + part + "' in '" + text + "': expected tp, cp, ep, dp or pp and a size, e.g. tp2";
      return false;
    }
    if (seen[dim]) {
      *error = "group '" + std::string(kNames[dim]) + "' given twice in '" + text + "'";
      return false;
    }
    seen[dim] = true;
    std::string num = part.substr(2);
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos ||
        std::atoi(num.c_str()) < 1) {
      *error = "bad size '" + num + "' for group '" + kNames[dim] + "' in '" + text +
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

std::string GroupKindOf(const Groups& groups, const std::vector<int32_t>& members) {
  if (members.size() < 2) return "";
  for (int32_t r : members) {
    if (r < 0 || r >= groups.world()) return "";
  }
  for (int dim = 0; dim < kDims; ++dim) {
    int n = SizeOf(groups, dim);
    if (n != static_cast<int>(members.size())) continue;
    int first[kDims];
    Coordinates(groups, members[0], first);
    std::vector<bool> covered(n, false);
    bool ok = true;
    for (int32_t r : members) {
      int c[kDims];
      Coordinates(groups, r, c);
      for (int i = 0; i < kDims && ok; ++i) {
        if (i != dim && c[i] != first[i]) ok = false;
      }
      if (!ok || covered[c[dim]]) {
        ok = false;
        break;
      }
      covered[c[dim]] = true;
    }
    if (ok) return kNames[dim];
  }
  return "";
}

int PipelineStage(const Groups& groups, int32_t rank) {
  if (rank < 0) return 0;
  int c[kDims];
  Coordinates(groups, rank, c);
  return c[4];
}

}  // namespace analysis
}  // namespace xtimer

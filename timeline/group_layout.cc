#include "timeline/group_layout.h"

#include <algorithm>
#include <set>

namespace xtimer {
namespace timeline {
namespace {

int CanonicalPriority(const std::string& d) {  // larger = slower (outer) in the display order
  if (d == "pp") return 5;
  if (d == "dp") return 4;
  if (d == "ep") return 3;
  if (d == "cp") return 2;
  return 1;  // tp
}

}  // namespace

int GroupLayout::world() const {
  int w = 1;
  for (const auto& d : dims) w *= d.second;
  return w;
}

std::vector<int> GroupLayout::Coordinates(int rank) const {
  std::vector<int> c;
  for (const auto& d : dims) {
    c.push_back(rank % d.second);
    rank /= d.second;
  }
  return c;
}

std::string GroupLayout::Label(int rank) const {
  std::vector<int> c = Coordinates(rank);
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return CanonicalPriority(dims[a].first) > CanonicalPriority(dims[b].first);
  });
  std::string s;
  for (size_t i : order) {
    if (dims[i].second == 1) continue;
    if (!s.empty()) s += ' ';
    s += dims[i].first + std::to_string(c[i]);
  }
  return s;
}

int64_t GroupLayout::OrderKey(int rank) const {
  std::vector<int> c = Coordinates(rank);
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return CanonicalPriority(dims[a].first) > CanonicalPriority(dims[b].first);
  });
  int64_t key = 0;
  for (size_t i : order) key = key * dims[i].second + c[i];
  return key;
}

bool ParseGroupLayout(const std::string& text, GroupLayout* layout, std::string* error) {
  layout->dims.clear();
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t dash = text.find('-', pos);
    std::string part = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (part.size() < 3) {
      *error = "bad group '" + part + "' in '" + text + "': expected e.g. tp2";
      return false;
    }
    std::string name = part.substr(0, 2);
    if (name != "tp" && name != "cp" && name != "ep" && name != "dp" && name != "pp") {
      *error = "unknown group '" + name + "' in '" + text + "' (tp, cp, ep, dp, pp)";
      return false;
    }
    if (!seen.insert(name).second) {
      *error = "group '" + name + "' given twice in '" + text + "'";
      return false;
    }
    std::string num = part.substr(2);
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(num) < 1) {
      *error = "bad size '" + num + "' for group '" + name + "' in '" + text + "'";
      return false;
    }
    layout->dims.push_back({name, std::stoi(num)});
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  return true;
}

}  // namespace timeline
}  // namespace xtimer

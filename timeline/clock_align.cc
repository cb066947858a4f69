#include "timeline/clock_align.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace xtimer {
namespace timeline {
namespace {

int64_t Median(std::vector<int64_t>* v) {
  if (v->empty()) return 0;
  size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  int64_t hi = (*v)[mid];
  if (v->size() % 2 == 1) return hi;
  int64_t lo = *std::max_element(v->begin(), v->begin() + mid);
  return lo + (hi - lo) / 2;
}

// Every (node, collective) entry, indexed both ways: per collective (key) its nodes, per node
// its collectives. Built by merging the nodes' sorted lists, so that nothing but the index itself
// is allocated (a heap of one cursor per node).
class EntryIndex {
 public:
  explicit EntryIndex(const std::vector<NodeEnds>& nodes) {
    node_begin_.assign(nodes.size() + 1, 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      node_begin_[i + 1] = node_begin_[i] + nodes[i].ends.size();
    }
    const size_t total = node_begin_.back();
    key_nodes_.reserve(total);
    node_entries_.resize(total);
    struct Cursor {
      const CollectiveEnd* at;
      uint32_t node;
      bool operator>(const Cursor& o) const {  // by key, then node
        return at->first != o.at->first ? at->first > o.at->first : node > o.node;
      }
    };
    std::vector<Cursor> heap;
    heap.reserve(nodes.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].ends.empty()) heap.push_back({nodes[i].ends.data(), i});
    }
    auto later = std::greater<Cursor>();
    std::make_heap(heap.begin(), heap.end(), later);
    const CollectiveEnd* last = nullptr;
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      Cursor& c = heap.back();
      if (last == nullptr || c.at->first != last->first) key_begin_.push_back(key_nodes_.size());
      last = c.at;
      key_nodes_.push_back(c.node);
      const std::vector<CollectiveEnd>& ends = nodes[c.node].ends;
      node_entries_[node_begin_[c.node] + (c.at - ends.data())] = {
          static_cast<uint32_t>(key_begin_.size() - 1), c.at->second};
      if (++c.at == ends.data() + ends.size()) {
        heap.pop_back();
      } else {
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    key_begin_.push_back(key_nodes_.size());
    key_begin_.shrink_to_fit();
  }

  struct Entry {
    uint32_t key;
    int64_t end;
  };
  size_t keys() const { return key_begin_.size() - 1; }
  size_t count(uint32_t node) const { return node_begin_[node + 1] - node_begin_[node]; }
  // Pointers from data(): a range may end at the vector's end, and the vector may be empty.
  const Entry* entries_begin(uint32_t node) const {
    return node_entries_.data() + node_begin_[node];
  }
  const Entry* entries_end(uint32_t node) const {
    return node_entries_.data() + node_begin_[node + 1];
  }
  const uint32_t* nodes_begin(uint32_t key) const { return key_nodes_.data() + key_begin_[key]; }
  const uint32_t* nodes_end(uint32_t key) const { return key_nodes_.data() + key_begin_[key + 1]; }

 private:
  std::vector<size_t> key_begin_;
  std::vector<uint32_t> key_nodes_;
  std::vector<size_t> node_begin_;
  std::vector<Entry> node_entries_;
};

class Aligner {
 public:
  Aligner(const std::vector<NodeEnds>& nodes, ClockAlignment* out)
      : index_(nodes), out_(out), aligned_(nodes.size(), false), count_(nodes.size(), 0),
        key_time_(index_.keys(), 0), key_source_(index_.keys(), kUnset) {}

  void Run() {
    const uint32_t n = static_cast<uint32_t>(aligned_.size());
    uint32_t ref = 0;
    for (uint32_t i = 1; i < n; ++i) {
      if (index_.count(i) > index_.count(ref)) ref = i;
    }
    out_->reference_of[ref] = static_cast<int>(ref);
    Align(ref, 0);
    while (!queue_.empty()) {
      Candidate c = queue_.top();
      queue_.pop();
      if (aligned_[c.node] || c.count != count_[c.node]) continue;  // stale
      Estimate(c.node);
    }
  }

 private:
  static constexpr uint32_t kUnset = ~0u;
  struct Candidate {
    uint32_t count;
    uint32_t node;
    bool operator<(const Candidate& o) const {  // most shared first, then the lower index
      return count != o.count ? count < o.count : node > o.node;
    }
  };

  // Fixes `node`'s offset; its collectives not yet timed in reference time get its times.
  void Align(uint32_t node, int64_t offset) {
    aligned_[node] = true;
    out_->offset[node] = offset;
    for (auto* e = index_.entries_begin(node); e != index_.entries_end(node); ++e) {
      if (key_source_[e->key] != kUnset) continue;
      key_source_[e->key] = node;
      key_time_[e->key] = e->end + offset;
      for (auto* u = index_.nodes_begin(e->key); u != index_.nodes_end(e->key); ++u) {
        if (aligned_[*u]) continue;
        queue_.push({++count_[*u], *u});
      }
    }
  }

  void Estimate(uint32_t node) {
    diffs_.clear();
    sources_.clear();
    for (auto* e = index_.entries_begin(node); e != index_.entries_end(node); ++e) {
      if (key_source_[e->key] == kUnset) continue;
      diffs_.push_back(key_time_[e->key] - e->end);
      sources_.push_back(key_source_[e->key]);
    }
    out_->shared[node] = diffs_.size();
    out_->reference_of[node] = static_cast<int>(MostFrequent(&sources_));
    Align(node, Median(&diffs_));
  }

  static uint32_t MostFrequent(std::vector<uint32_t>* v) {
    std::sort(v->begin(), v->end());
    uint32_t best = (*v)[0];
    size_t best_run = 0;
    for (size_t i = 0; i < v->size();) {
      size_t j = i;
      while (j < v->size() && (*v)[j] == (*v)[i]) ++j;
      if (j - i > best_run) {
        best_run = j - i;
        best = (*v)[i];
      }
      i = j;
    }
    return best;
  }

  EntryIndex index_;
  ClockAlignment* out_;
  std::vector<bool> aligned_;
  std::vector<uint32_t> count_;
  std::vector<int64_t> key_time_;     // a collective's end in reference time
  std::vector<uint32_t> key_source_;  // the aligned node that time came from
  std::priority_queue<Candidate> queue_;
  std::vector<int64_t> diffs_;
  std::vector<uint32_t> sources_;
};

}  // namespace

namespace {

// Calls fn with each entry of the merge of two sorted lists, the earliest end for a shared key.
template <typename Fn>
void ForEachMerged(const std::vector<CollectiveEnd>& a, const std::vector<CollectiveEnd>& b,
                   Fn fn) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      fn(a[i++]);
    } else if (i == a.size() || b[j].first < a[i].first) {
      fn(b[j++]);
    } else {
      fn({a[i].first, std::min(a[i].second, b[j].second)});
      ++i;
      ++j;
    }
  }
}

}  // namespace

void MergeEnds(std::vector<CollectiveEnd>* node, const std::vector<CollectiveEnd>& rank) {
  size_t size = 0;  // counted first, so that the node's list holds no unused capacity
  ForEachMerged(*node, rank, [&](const CollectiveEnd&) { ++size; });
  std::vector<CollectiveEnd> merged;
  merged.reserve(size);
  ForEachMerged(*node, rank, [&](const CollectiveEnd& e) { merged.push_back(e); });
  node->swap(merged);
}

ClockAlignment AlignClocks(const std::vector<NodeEnds>& nodes) {
  ClockAlignment out;
  out.offset.assign(nodes.size(), 0);
  out.reference_of.assign(nodes.size(), -1);
  out.shared.assign(nodes.size(), 0);
  if (nodes.empty()) return out;
  Aligner(nodes, &out).Run();
  return out;
}

}  // namespace timeline
}  // namespace xtimer

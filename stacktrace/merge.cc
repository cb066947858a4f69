#include "stacktrace/merge.h"

#include <algorithm>
#include <map>

#include "stacktrace/frame_owner.h"

namespace xtimer {
namespace stacktrace {
namespace {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

namespace {

constexpr size_t kIndexedChildren = 16;  // from this many children on, a node's are indexed
constexpr uint32_t kNoNode = UINT32_MAX;

uint64_t ChildKey(uint32_t parent, uint32_t frame) { return uint64_t{parent} << 32 | frame; }

}  // namespace

StackTree::StackTree(size_t max_nodes) : max_nodes_(std::max<size_t>(max_nodes, 2)) {
  nodes_.emplace_back();
}

const Thread* StackTree::MainThread(const StacksFile& file) {
  for (const Thread& t : file.threads) {
    if (t.tid == file.pid) return &t;
  }
  return file.threads.empty() ? nullptr : &file.threads[0];
}

bool StackTree::SameFrame(const Frame& a, const Frame& b) {
  return a.kind == b.kind && a.line == b.line && a.function == b.function && a.module == b.module &&
         a.file == b.file;
}

void StackTree::NamedThreads::Of(const StacksFile& file) {
  threads.clear();
  for (const Thread& t : file.threads) threads.push_back(&t);
  std::stable_sort(threads.begin(), threads.end(),
                   [](const Thread* a, const Thread* b) { return a->tid < b->tid; });
  // The n-th thread of a name (in tid order) is "NAME #n": runs of one name, by position.
  order.resize(threads.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return threads[a]->name < threads[b]->name; });
  names.resize(threads.size());
  for (size_t i = 0, n = 1; i < order.size(); ++i) {
    n = i > 0 && threads[order[i]]->name == threads[order[i - 1]]->name ? n + 1 : 1;
    std::string& name = names[order[i]];
    name = threads[order[i]]->name;
    if (n > 1) name += " #" + std::to_string(n);
  }
}

void StackTree::FrameKey(const Frame& frame, std::string* key) {
  key->clear();
  *key += static_cast<char>('0' + frame.kind);
  key->append(reinterpret_cast<const char*>(&frame.line), sizeof frame.line);
  *key += '\0';
  *key += frame.function;
  *key += '\0';
  *key += frame.module;
  *key += '\0';
  *key += frame.file;
}

uint32_t StackTree::Intern(const Frame& frame) {
  std::string& key = key_;  // reused: a known frame costs no allocation
  FrameKey(frame, &key);
  auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  frame_ids_.emplace(key, static_cast<uint32_t>(frames_.size()));
  frames_.push_back(frame);
  return static_cast<uint32_t>(frames_.size() - 1);
}

uint32_t StackTree::FindChild(uint32_t parent, uint32_t frame) const {
  const std::vector<uint32_t>& children = nodes_[parent].children;
  if (children.size() >= kIndexedChildren) {
    auto it = child_index_.find(ChildKey(parent, frame));
    return it == child_index_.end() ? kNoNode : it->second;
  }
  for (uint32_t c : children) {
    if (nodes_[c].frame == frame) return c;
  }
  return kNoNode;
}

uint32_t StackTree::Child(uint32_t parent, uint32_t frame) {
  const uint32_t found = FindChild(parent, frame);
  if (found != kNoNode) return found;
  Node n;
  n.frame = frame;
  n.parent = static_cast<int32_t>(parent);
  n.depth = nodes_[parent].depth + 1;
  nodes_.push_back(std::move(n));
  uint32_t id = static_cast<uint32_t>(nodes_.size() - 1);
  std::vector<uint32_t>& children = nodes_[parent].children;
  children.push_back(id);
  if (children.size() == kIndexedChildren) {
    for (uint32_t c : children) child_index_.emplace(ChildKey(parent, nodes_[c].frame), c);
  } else if (children.size() > kIndexedChildren) {
    child_index_.emplace(ChildKey(parent, frame), id);
  }
  return id;
}

void StackTree::Visit(uint32_t node, int32_t rank) { nodes_[node].ranks.Append(rank); }

std::vector<uint32_t> StackTree::WalkPath(const std::string& thread,
                                          const std::vector<uint32_t>& frames,
                                          const std::string& error) {
  std::vector<uint32_t> path;
  uint32_t at = 0;
  auto step = [&](uint32_t frame) {  // false: a new node is needed and the tree is full
    const uint32_t c = FindChild(at, frame);
    if (c == kNoNode && nodes_.size() >= max_nodes_) return false;
    at = c == kNoNode ? Child(at, frame) : c;
    path.push_back(at);
    return true;
  };
  bool whole = step(Intern(Frame{Frame::kThread, thread, "", 0}));
  for (auto it = frames.rbegin(); whole && it != frames.rend(); ++it) whole = step(*it);
  if (whole && (frames.empty() || !error.empty())) {
    whole = step(Intern(Frame{Frame::kError, error.empty() ? "no frames" : error, "", 0}));
  }
  if (!whole) {
    ++cut_paths_;
    path.push_back(Child(at, Intern(Frame{Frame::kError,
                                          "cut: the merged stacks reached " +
                                              std::to_string(max_nodes_) + " frames, the limit",
                                          "", 0})));
  }
  return path;
}

void StackTree::AddPath(int32_t rank, const std::string& thread,
                        const std::vector<uint32_t>& frames, const std::string& error) {
  // The key: thread name and error with their lengths (names may hold any byte), then the ids.
  std::string& key = key_;
  const uint32_t sizes[2] = {static_cast<uint32_t>(thread.size()),
                             static_cast<uint32_t>(error.size())};
  key.assign(reinterpret_cast<const char*>(sizes), sizeof sizes).append(thread).append(error);
  key.append(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(uint32_t));
  auto it = paths_.find(key);
  if (it == paths_.end()) {
    std::string new_key = key;  // WalkPath's Intern reuses key_
    it = paths_.emplace(std::move(new_key), WalkPath(thread, frames, error)).first;
  }
  for (uint32_t node : it->second) Visit(node, rank);
  nodes_[it->second.back()].self_ranks.push_back(rank);
}

bool StackTree::AddRank(const StacksFile& file) {
  if (!root_ranks_.empty() && root_ranks_.back() >= file.rank) return false;
  root_ranks_.push_back(file.rank);
  nodes_[0].ranks.Append(file.rank);
  // The file's frames are interned once each, on first use (so ids come in the order of use);
  // one equal to the frame the previous file had at its index takes that id without a lookup
  // (files of one job mostly share their table; an equal frame's Intern gives the same id).
  std::vector<uint32_t> local(file.frames.size(), UINT32_MAX);
  auto id = [&](uint32_t f) {
    if (local[f] != UINT32_MAX) return local[f];
    const Frame& frame = file.frames[f];
    const uint32_t last = f < last_ids_.size() ? last_ids_[f] : UINT32_MAX;
    local[f] = last != UINT32_MAX && SameFrame(frames_[last], frame) ? last : Intern(frame);
    return local[f];
  };
  NamedThreads named;
  named.Of(file);
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < named.threads.size(); ++i) {
    const Thread* t = named.threads[i];
    ids.clear();
    for (uint32_t f : t->frames) ids.push_back(id(f));
    AddPath(file.rank, named.names[i], ids, t->error);
  }
  if (file.threads.empty()) {
    AddPath(file.rank, "(no threads)", {}, file.error.empty() ? "no threads" : file.error);
  }
  RankStack main{file.rank, "", {}, file.error};
  if (const Thread* t = MainThread(file)) {
    main.thread = t->name;
    for (uint32_t f : t->frames) main.frames.push_back(id(f));
    if (main.error.empty()) main.error = t->error;
  }
  if (main.frames.empty() && main.error.empty()) main.error = "no frames";
  main_stacks_.push_back(std::move(main));
  last_ids_ = std::move(local);
  return true;
}

int64_t StackTree::Width(uint32_t node) const {
  if (node != 0) return static_cast<int64_t>(nodes_[node].ranks.size());
  int64_t sum = 0;
  for (uint32_t c : nodes_[0].children) sum += Width(c);
  return sum;
}

std::vector<RankGroup> StackTree::GroupRanks() const {
  std::map<std::pair<std::vector<uint32_t>, std::string>, size_t> index;
  std::vector<RankGroup> groups;
  for (const RankStack& s : main_stacks_) {
    auto key = std::make_pair(s.frames, s.frames.empty() ? s.error : std::string());
    auto it = index.emplace(key, groups.size());
    if (it.second) groups.push_back(RankGroup{{}, s.frames, s.thread, key.second});
    groups[it.first->second].ranks.push_back(s.rank);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const RankGroup& a, const RankGroup& b) {
    return a.ranks.size() > b.ranks.size();
  });
  return groups;
}

void RankSet::Append(int32_t rank) {
  if (!runs_.empty() && rank <= runs_.back().second + 1) {
    if (rank <= runs_.back().second) return;
    runs_.back().second = rank;
  } else {
    runs_.emplace_back(rank, rank);
  }
  ++count_;
}

void RankSet::Merge(const std::vector<int32_t>& ascending) {
  if (ascending.empty()) return;
  if (!runs_.empty() && ascending.front() <= runs_.back().second) {  // interleaved: rebuild
    std::vector<int32_t> all = ToVector();
    std::vector<int32_t> merged(all.size() + ascending.size());
    std::merge(all.begin(), all.end(), ascending.begin(), ascending.end(), merged.begin());
    runs_.clear();
    count_ = 0;
    for (int32_t r : merged) Append(r);
    return;
  }
  for (int32_t r : ascending) Append(r);
}

std::vector<int32_t> RankSet::ToVector() const {
  std::vector<int32_t> out;
  out.reserve(count_);
  for (const auto& run : runs_) {
    for (int64_t r = run.first; r <= run.second; ++r) out.push_back(static_cast<int32_t>(r));
  }
  return out;
}

std::string RankSetRanges(const RankSet& ranks) {
  std::string out;
  for (const auto& run : ranks.runs()) {
    if (!out.empty()) out += ',';
    out += std::to_string(run.first);
    if (run.second > run.first) out += '-' + std::to_string(run.second);
  }
  return out;
}

std::string RankRanges(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

Origin OriginOf(const Frame& f) {
  if (f.kind == Frame::kPython) return Origin::kPython;
  if (f.kind == Frame::kThread) return Origin::kThread;
  if (f.kind == Frame::kError) return Origin::kError;
  switch (OwnerOf(f)) {
    case Owner::kInterpreter: return Origin::kInterpreter;
    case Owner::kCuda: return Origin::kCollective;
    case Owner::kXtimer: return Origin::kXtimer;
    default: return Origin::kNative;
  }
}

std::string FrameLabel(const Frame& f) {
  switch (f.kind) {
    case Frame::kThread: return "thread " + f.function;
    case Frame::kError: return "[" + f.function + "]";
    case Frame::kPython:
      return f.function + " (" + BaseName(f.module) + ":" + std::to_string(f.line) + ")";
    default: {
      std::string name = f.function.empty() ? "??" : f.function;
      if (f.line > 0) {
        name += " (" + BaseName(f.file.empty() ? f.module : f.file) + ":" + std::to_string(f.line) +
                ")";
      }
      return name;
    }
  }
}

namespace {

std::string FoldedLabel(const Frame& f) {
  std::string s = FrameLabel(f);
  for (char& c : s) {
    if (c == ';' || c == '\n' || c == '\r') c = ':';
  }
  return s;
}

struct Folder {
  const StackTree& tree;
  size_t max_bytes;
  OutputCut cut;
  std::string path, out;
  bool full = false;  // a line did not fit: no more are written

  void Fold(uint32_t node) {
    const Node& n = tree.nodes()[node];
    const size_t mark = path.size();
    if (node != 0) {
      if (n.depth > 1) path += ';';
      path += FoldedLabel(tree.frames()[n.frame]);
    }
    if (!n.self_ranks.empty()) {
      const std::string tail = " [" + tree.Members(n.self_ranks) + "] " +
                               std::to_string(n.self_ranks.size()) + "\n";
      full = full || out.size() + path.size() + tail.size() > max_bytes;
      if (!full) out.append(path).append(tail);
      ++(full ? cut.left_out : cut.written);
    }
    std::vector<uint32_t> kids = n.children;
    std::stable_sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      return tree.nodes()[a].ranks.size() > tree.nodes()[b].ranks.size();
    });
    for (uint32_t c : kids) {
      if (!full) Fold(c);
    }
    path.resize(mark);
  }
};

}  // namespace

std::string FoldedStacks(const StackTree& tree, size_t max_bytes, OutputCut* cut) {
  Folder folder{tree, max_bytes, {}, {}, {}};
  folder.Fold(0);
  if (folder.full) {  // the lines never reached: every node where stacks end, less those seen
    size_t ends = 0;
    for (const Node& n : tree.nodes()) ends += n.self_ranks.empty() ? 0 : 1;
    folder.cut.left_out = ends - folder.cut.written;
  }
  if (cut != nullptr) *cut = folder.cut;
  return std::move(folder.out);
}

}  // namespace stacktrace
}  // namespace xtimer

#include "stacktrace/stack_merger.h"

#include <algorithm>

namespace xtimer {
namespace stacktrace {
namespace {

// The lookup key of a path: thread name and error with their lengths (names may hold any
// byte), then the frame ids (as StackTree::AddPath builds it).
void PathKey(const std::string& thread, const std::string& error,
             const std::vector<uint32_t>& ids, std::string* key) {
  const uint32_t sizes[2] = {static_cast<uint32_t>(thread.size()),
                             static_cast<uint32_t>(error.size())};
  key->assign(reinterpret_cast<const char*>(sizes), sizeof sizes).append(thread).append(error);
  key->append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(uint32_t));
}

constexpr char kNoThreads[] = "(no threads)";

}  // namespace

// *ranks = the ranks of the paths `ids`, ascending (a rank twice when two paths have it).
void StackMerger::UnionOf(const std::vector<Merged>& paths, const std::vector<uint32_t>& ids,
                          std::vector<int32_t>* ranks) {
  ranks->clear();
  bool sorted = true;
  for (uint32_t id : ids) {
    const std::vector<int32_t>& add = paths[id].ranks;
    sorted = sorted && (ranks->empty() || add.empty() || ranks->back() <= add.front());
    ranks->insert(ranks->end(), add.begin(), add.end());
  }
  if (!sorted) std::sort(ranks->begin(), ranks->end());
}

StackMerger::StackMerger(size_t files, int parts)
    : parts_(static_cast<size_t>(std::max(parts, 1))), files_(files) {}

// The part's id of frame `index` of `f`: one equal to the frame the previous file had at that
// index takes its id without a lookup (files of one job mostly share their table).
uint32_t StackMerger::FrameId(Part* p, const StacksFile& f, uint32_t index) {
  uint32_t& slot = p->local[index];
  if (slot != UINT32_MAX) return slot;
  const Frame& frame = f.frames[index];
  const uint32_t last = index < p->last_frames.size() ? p->last_frames[index] : UINT32_MAX;
  if (last != UINT32_MAX && StackTree::SameFrame(p->frames[last], frame)) return slot = last;
  StackTree::FrameKey(frame, &p->key);
  auto it = p->frame_ids.find(p->key);
  if (it != p->frame_ids.end()) return slot = it->second;
  slot = static_cast<uint32_t>(p->frames.size());
  p->frame_ids.emplace(p->key, slot);
  p->frames.push_back(frame);
  return slot;
}

// The part's id of the path (thread, error, p->ids); the previous file's thread at the same
// position is tried first (ranks of one job mostly stand in the same places).
uint32_t StackMerger::PathId(Part* p, size_t position, const std::string& thread,
                             const std::string& error) {
  if (position < p->last_paths.size()) {
    const Path& last = p->paths[p->last_paths[position]];
    if (last.frames == p->ids && last.thread == thread && last.error == error) {
      return p->last_paths[position];
    }
  }
  PathKey(thread, error, p->ids, &p->key);
  auto it = p->path_ids.find(p->key);
  if (it != p->path_ids.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(p->paths.size());
  p->path_ids.emplace(p->key, id);
  p->paths.push_back(Path{thread, error, p->ids, {}});
  return id;
}

void StackMerger::Add(int part, size_t file, const StacksFile& f) {
  Part& p = parts_[static_cast<size_t>(part)];
  FileStacks& out = files_[file];
  out.rank = f.rank;
  out.part = part;
  p.local.assign(f.frames.size(), UINT32_MAX);
  p.named.Of(f);
  p.now_paths.clear();
  const Thread* main = StackTree::MainThread(f);
  for (size_t i = 0; i < p.named.threads.size(); ++i) {
    const Thread* t = p.named.threads[i];
    p.ids.clear();
    for (uint32_t index : t->frames) p.ids.push_back(FrameId(&p, f, index));
    const uint32_t id = PathId(&p, i, p.named.names[i], t->error);
    p.paths[id].uses.push_back(Use{static_cast<uint32_t>(file), static_cast<uint32_t>(i)});
    p.now_paths.push_back(id);
    if (t == main) out.main_path = id;
  }
  if (f.threads.empty()) {
    p.ids.clear();
    const uint32_t id = PathId(&p, 0, kNoThreads, f.error.empty() ? "no threads" : f.error);
    p.paths[id].uses.push_back(Use{static_cast<uint32_t>(file), 0});
    p.now_paths.push_back(id);
  }
  out.main_thread = main ? main->name : "";
  out.main_error = f.error.empty() && main ? main->error : f.error;
  p.last_frames.swap(p.local);
  p.last_paths.swap(p.now_paths);
}

std::vector<StackMerger::Merged> StackMerger::MergePaths(
    const std::vector<int32_t>& rank_of, std::vector<std::vector<uint32_t>>* index) const {
  std::vector<Merged> merged;
  std::unordered_map<std::string, uint32_t> frame_ids, path_ids;  // over all parts
  std::string key;
  std::vector<uint32_t> ids;
  index->assign(parts_.size(), {});
  for (size_t part = 0; part < parts_.size(); ++part) {
    const Part& p = parts_[part];
    std::vector<uint32_t> to_merged(p.frames.size());
    for (size_t i = 0; i < p.frames.size(); ++i) {
      StackTree::FrameKey(p.frames[i], &key);
      to_merged[i] = frame_ids.emplace(key, static_cast<uint32_t>(frame_ids.size())).first->second;
    }
    (*index)[part].assign(p.paths.size(), UINT32_MAX);
    for (size_t j = 0; j < p.paths.size(); ++j) {
      const Path& path = p.paths[j];
      ids.clear();
      for (uint32_t f : path.frames) ids.push_back(to_merged[f]);
      PathKey(path.thread, path.error, ids, &key);
      auto it = path_ids.emplace(key, static_cast<uint32_t>(merged.size())).first;
      if (it->second == merged.size()) {
        merged.push_back(Merged{static_cast<int>(part), static_cast<uint32_t>(j), UINT64_MAX, {}, {}});
      }
      Merged& m = merged[it->second];
      for (const Use& u : path.uses) {
        const int32_t rank = rank_of[u.file];
        if (rank < 0) continue;
        m.ranks.push_back(rank);
        m.first = std::min(m.first, static_cast<uint64_t>(rank) << 32 | u.thread);
      }
      (*index)[part][j] = it->second;
    }
  }
  // In the order AddRank would have walked them, without the paths no kept file takes.
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < merged.size(); ++i) {
    if (!merged[i].ranks.empty()) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return merged[a].first < merged[b].first; });
  std::vector<uint32_t> renumber(merged.size(), UINT32_MAX);
  std::vector<Merged> sorted;
  for (uint32_t i : order) {
    renumber[i] = static_cast<uint32_t>(sorted.size());
    sorted.push_back(std::move(merged[i]));
    std::sort(sorted.back().ranks.begin(), sorted.back().ranks.end());
  }
  for (std::vector<uint32_t>& part : *index) {
    for (uint32_t& m : part) m = m == UINT32_MAX ? m : renumber[m];
  }
  return sorted;
}

StackTree StackMerger::Build(const std::vector<size_t>& kept) const {
  StackTree tree;
  std::vector<int32_t> rank_of(files_.size(), -1);
  std::vector<size_t> files;  // kept, in order
  for (size_t file : kept) {
    if (file >= files_.size() || files_[file].part < 0) continue;
    const int32_t rank = files_[file].rank;
    if (!files.empty() && files_[files.back()].rank >= rank) continue;
    rank_of[file] = rank;
    files.push_back(file);
    tree.root_ranks_.push_back(rank);
    tree.nodes_[0].ranks.Append(rank);
  }
  std::vector<std::vector<uint32_t>> index;
  std::vector<Merged> paths = MergePaths(rank_of, &index);
  std::vector<std::vector<uint32_t>> through, ending;  // node -> the paths through it, ending
  for (uint32_t i = 0; i < paths.size(); ++i) {
    Merged& m = paths[i];
    const Part& p = parts_[static_cast<size_t>(m.part)];
    const Path& path = p.paths[m.path];
    for (uint32_t f : path.frames) m.frames.push_back(tree.Intern(p.frames[f]));
    const std::vector<uint32_t> nodes = tree.WalkPath(path.thread, m.frames, path.error);
    through.resize(tree.nodes_.size());
    ending.resize(tree.nodes_.size());
    for (uint32_t node : nodes) through[node].push_back(i);
    ending[nodes.back()].push_back(i);
  }
  std::vector<int32_t> ranks;
  for (size_t node = 1; node < through.size(); ++node) {
    if (through[node].size() == 1) {
      tree.nodes_[node].ranks.Merge(paths[through[node][0]].ranks);
    } else {
      UnionOf(paths, through[node], &ranks);
      for (int32_t r : ranks) tree.nodes_[node].ranks.Append(r);  // each once
    }
    UnionOf(paths, ending[node], &tree.nodes_[node].self_ranks);
  }
  for (size_t file : files) {
    const FileStacks& f = files_[file];
    StackTree::RankStack main{f.rank, f.main_thread, {}, f.main_error};
    if (f.main_path != UINT32_MAX) {
      main.frames = paths[index[static_cast<size_t>(f.part)][f.main_path]].frames;
    }
    if (main.frames.empty() && main.error.empty()) main.error = "no frames";
    tree.main_stacks_.push_back(std::move(main));
  }
  return tree;
}

}  // namespace stacktrace
}  // namespace xtimer

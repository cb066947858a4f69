// Writes synthetic per-rank .stacks files (docs/stacks.md) for the tests and the benchmark:
//   gen_stacks OUT_DIR [--ranks N] [--nodes K] [--threads T] [--frames F] [--outlier R]
//              [--largest 1]
// Ranks are spread over K node folders OUT_DIR/node{i}/. Every rank's main thread waits in
// ncclAllReduce under train_step (train.py:88); the outlier rank's main thread is in
// load_batch (data.py:42) instead. Each stack has F frames (padding layers of Python and
// interpreter frames); the other T-1 threads wait in pthread_cond_wait.
// --largest 1: instead, each rank's file is as large as the file's limits allow (docs/stacks.md):
// 4,096 threads of distinct names with 1,024 frames each, every frame's function and module 4,096
// bytes, as many frames in the table as keep the file under 64 MiB; every thread's path is its
// own, so the merge would need 4 M nodes for one file.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stacktrace/stacks_file.h"

namespace st = xtimer::stacktrace;

namespace {

struct Options {
  int ranks = 8, nodes = 2, threads = 2, frames = 8, outlier = 3, largest = 0;
};

// The largest file the limits allow (--largest), with a frame table of `table` frames.
void MakeLargest(int table, st::StacksFile* f) {
  f->frames.clear();
  f->threads.clear();
  for (int i = 0; i < table; ++i) {
    std::string fn = "f" + std::to_string(i) + "_";
    fn.resize(st::kMaxStringBytes, 'x');
    std::string mod = "/m" + std::to_string(i) + "/";
    mod.resize(st::kMaxStringBytes, 'y');
    f->frames.push_back(st::Frame{st::Frame::kNative, fn, mod, 0});
  }
  for (int t = 0; t < st::kMaxThreads; ++t) {
    st::Thread thread{f->pid + t, "t" + std::to_string(t), {}, ""};
    for (int k = 0; k < st::kMaxFramesPerThread; ++k) {
      thread.frames.push_back(static_cast<uint32_t>((t * 7 + k * 13) % table));
    }
    f->threads.push_back(std::move(thread));
  }
}

// MakeLargest's text with the largest table under kMaxFileBytes.
std::string LargestText(st::StacksFile* f) {
  std::string text;
  for (int table = 5000; table > 1; table -= 100) {
    MakeLargest(table, f);
    text = st::WriteStacksJson(*f);
    if (text.size() <= st::kMaxFileBytes) break;
  }
  return text;
}

// The frame table: 0..9 fixed frames, then padding pairs.
void AddFrames(int depth, st::StacksFile* f) {
  auto add = [&](st::Frame::Kind k, const std::string& fn, const char* mod, int line) {
    f->frames.push_back(st::Frame{k, fn, mod, line});
  };
  const char* py = "/usr/lib/libpython3.11.so.1.0";
  add(st::Frame::kNative, "ncclAllReduce", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", 0);   // 0
  add(st::Frame::kNative, "_PyEval_EvalFrameDefault", py, 0);                               // 1
  add(st::Frame::kPython, "train_step", "/job/train.py", 88);                                // 2
  add(st::Frame::kPython, "main", "/job/train.py", 120);                                     // 3
  add(st::Frame::kPython, "load_batch", "/job/data.py", 42);                                 // 4
  add(st::Frame::kPython, "train_step", "/job/train.py", 80);                                // 5
  add(st::Frame::kNative, "pthread_cond_wait", "/lib/x86_64-linux-gnu/libc.so.6", 0);        // 6
  add(st::Frame::kNative, "start_thread", "/lib/x86_64-linux-gnu/libc.so.6", 0);             // 7
  add(st::Frame::kNative, "cudaStreamSynchronize", "/usr/lib/libcudart.so.13", 0);           // 8
  add(st::Frame::kNative, "clone3", "/lib/x86_64-linux-gnu/libc.so.6", 0);                   // 9
  for (int i = 0; i < depth; ++i) {
    add(st::Frame::kPython, "layer_" + std::to_string(i), "/job/model.py", 100 + i);
    add(st::Frame::kNative, "_PyFunction_Vectorcall", py, 0);
  }
}

st::StacksFile MakeRank(const Options& o, int rank) {
  st::StacksFile f;
  f.job = "synthetic";
  f.rank = rank;
  f.world_size = o.ranks;
  f.local_rank = rank % std::max(1, o.ranks / o.nodes);
  f.host = "node" + std::to_string(rank * o.nodes / o.ranks);
  f.pid = 1000 + rank;
  f.capture_time_ns = 1764000000000000000LL;
  f.process_state = "S";
  int pad = std::max(0, (o.frames - 4) / 2);
  AddFrames(pad, &f);
  st::Thread main{f.pid, "MainThread", {}, ""};
  main.frames = rank == o.outlier ? std::vector<uint32_t>{4, 1, 5, 1}
                                  : std::vector<uint32_t>{0, 1, 2, 1};
  for (int i = pad - 1; i >= 0 && static_cast<int>(main.frames.size()) + 3 <= o.frames; --i) {
    main.frames.push_back(10 + 2 * i);
    main.frames.push_back(11 + 2 * i);
  }
  main.frames.push_back(3);
  if (static_cast<int>(main.frames.size()) > o.frames) main.frames.resize(std::max(o.frames, 1));
  f.threads.push_back(main);
  for (int t = 1; t < o.threads; ++t) {
    st::Thread worker{f.pid + t, t % 2 ? "pt_autograd" : "pt_dataloader", {6}, ""};
    for (int i = 0; static_cast<int>(worker.frames.size()) < o.frames - 2; ++i) {
      worker.frames.push_back(t % 2 ? 8 : 6);
    }
    worker.frames.push_back(7);
    worker.frames.push_back(9);
    f.threads.push_back(worker);
  }
  return f;
}

bool Flag(int argc, char** argv, int* i, const char* name, int* out) {
  if (std::strcmp(argv[*i], name) != 0 || *i + 1 >= argc) return false;
  *out = std::atoi(argv[++*i]);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* dir = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (Flag(argc, argv, &i, "--ranks", &o.ranks) || Flag(argc, argv, &i, "--nodes", &o.nodes) ||
        Flag(argc, argv, &i, "--threads", &o.threads) ||
        Flag(argc, argv, &i, "--frames", &o.frames) ||
        Flag(argc, argv, &i, "--outlier", &o.outlier) ||
        Flag(argc, argv, &i, "--largest", &o.largest)) {
      continue;
    }
    if (argv[i][0] == '-' || dir != nullptr) {
      std::fprintf(stderr, "usage: gen_stacks OUT_DIR [--ranks N] [--nodes K] [--threads T] "
                           "[--frames F] [--outlier R] [--largest 1]\n");
      return 2;
    }
    dir = argv[i];
  }
  if (dir == nullptr || o.ranks < 1 || o.nodes < 1 || o.nodes > o.ranks || o.threads < 1 ||
      o.frames < 1 || o.frames > st::kMaxFramesPerThread) {
    std::fprintf(stderr, "gen_stacks: need OUT_DIR, ranks >= nodes >= 1, threads >= 1, "
                         "1 <= frames <= 1024\n");
    return 2;
  }
  for (int rank = 0; rank < o.ranks; ++rank) {
    st::StacksFile f = MakeRank(o, rank);
    std::string node = std::string(dir) + "/" + f.host;
    mkdir(dir, 0755);
    mkdir(node.c_str(), 0755);
    std::string path = node + "/" + st::StacksFileName(rank, o.ranks);
    FILE* out = std::fopen(path.c_str(), "w");
    std::string text = o.largest ? LargestText(&f) : st::WriteStacksJson(f);
    if (out == nullptr || std::fwrite(text.data(), 1, text.size(), out) != text.size() ||
        std::fclose(out) != 0) {
      std::fprintf(stderr, "gen_stacks: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

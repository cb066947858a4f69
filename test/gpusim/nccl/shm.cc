#include "test/gpusim/nccl/shm.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace nccl {
namespace {

constexpr const char* kNamePrefix = "xtsim-nccl-";
// How long a rank waits for the creator to size and initialise the segment.
constexpr int64_t kCreatorTimeoutNs = 30'000'000'000;
// A name without a readable header is only swept once it is this old (it may be being created).
constexpr int64_t kStaleAgeS = 60;

size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

struct Layout {
  size_t slot_bytes;
  size_t p2p_bytes;
  size_t ranks_offset;
  size_t staging_offset;
  size_t p2p_offset;
  size_t channel_stride;
  size_t total;
};

Layout ComputeLayout(int nranks, size_t slot_bytes, size_t p2p_bytes) {
  Layout l;
  size_t n = static_cast<size_t>(nranks);
  l.slot_bytes = slot_bytes;
  l.p2p_bytes = p2p_bytes;
  l.ranks_offset = RoundUp(sizeof(ShmHeader), 64);
  l.staging_offset = RoundUp(l.ranks_offset + n * sizeof(ShmRank), 64);
  l.p2p_offset = l.staging_offset + n * 2 * slot_bytes;
  l.channel_stride = RoundUp(sizeof(ShmP2p), 64) + p2p_bytes;
  l.total = l.p2p_offset + n * n * l.channel_stride;
  return l;
}

// Sizes chosen by the creator. Staging must hold at least one element of every block of an
// all-to-all (nranks blocks of up to 8 bytes); the p2p rings shrink with nranks^2 because every
// ordered pair has one (pages are only touched when a pair talks, but the name space is sparse).
Layout CreatorLayout(int nranks) {
  int64_t slot = EnvInt("XTIMER_SIM_NCCL_CHUNK_BYTES", 512 * 1024);
  if (slot < 64 || slot > (int64_t{1} << 30)) {
    Fatal("XTIMER_SIM_NCCL_CHUNK_BYTES=%lld is out of range [64, 2^30]",
          static_cast<long long>(slot));
  }
  size_t slot_bytes =
      RoundUp(std::max<size_t>(static_cast<size_t>(slot), 64 * static_cast<size_t>(nranks)), 64);
  size_t n2 = static_cast<size_t>(nranks) * static_cast<size_t>(nranks);
  int64_t p2p = EnvInt("XTIMER_SIM_NCCL_P2P_BYTES", 0);
  if (p2p < 0 || p2p > (int64_t{1} << 30)) {
    Fatal("XTIMER_SIM_NCCL_P2P_BYTES=%lld is out of range [0, 2^30]", static_cast<long long>(p2p));
  }
  size_t p2p_bytes = p2p > 0 ? static_cast<size_t>(p2p)
                             : std::clamp<size_t>((size_t{32} << 20) / n2, 4096, 256 * 1024);
  return ComputeLayout(nranks, slot_bytes, RoundUp(std::max<size_t>(p2p_bytes, 64), 64));
}

void SleepUs(int64_t us) {
  timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
  nanosleep(&ts, nullptr);
}

// Threads of this process share mappings. Never destroyed: segments may be released by
// executor threads while the process exits.
struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, std::weak_ptr<Segment>> open;
};
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

// Creates and initialises the segment, or returns -1 with errno EEXIST when someone else did.
int CreateSegment(const std::string& name, int nranks, uint8_t** base, size_t* size,
                  std::string* error) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return -1;
  Layout l = CreatorLayout(nranks);
  if (ftruncate(fd, static_cast<off_t>(l.total)) != 0) {
    *error = "ftruncate(" + name + "): " + strerror(errno);
    close(fd);
    shm_unlink(name.c_str());
    return -2;
  }
  void* p = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *error = "mmap(" + name + "): " + strerror(errno);
    shm_unlink(name.c_str());
    return -2;
  }
  // The file is zero-filled, which is a valid initial state for every atomic in the layout;
  // placement-new the header and rank records anyway so their lifetime formally begins here.
  auto* h = new (p) ShmHeader();
  h->magic = kShmMagic;
  h->version = kShmVersion;
  h->nranks = static_cast<uint32_t>(nranks);
  h->slot_bytes = l.slot_bytes;
  h->p2p_bytes = l.p2p_bytes;
  h->total_bytes = l.total;
  h->creator_pid = static_cast<int32_t>(getpid());
  h->creator_pidns = PidNamespace();
  new (static_cast<uint8_t*>(p) + l.ranks_offset) ShmRank[static_cast<size_t>(nranks)]();
  h->ready.store(1, std::memory_order_release);
  *base = static_cast<uint8_t*>(p);
  *size = l.total;
  return 0;
}

// Maps a segment another rank created, waiting (bounded) for the creator to finish.
bool AttachSegment(const std::string& name, int nranks, uint8_t** base, size_t* size,
                   std::string* error) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    *error = "shm_open(" + name + "): " + strerror(errno);
    return false;
  }
  int64_t deadline = NowNs() + kCreatorTimeoutNs;
  struct stat st;
  while (fstat(fd, &st) == 0 && st.st_size == 0 && NowNs() < deadline) SleepUs(100);
  if (st.st_size < static_cast<off_t>(sizeof(ShmHeader))) {
    *error = "segment " + name + " was never sized by its creator";
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *error = "mmap(" + name + "): " + strerror(errno);
    return false;
  }
  auto* h = static_cast<ShmHeader*>(p);
  while (h->ready.load(std::memory_order_acquire) == 0 && NowNs() < deadline) SleepUs(100);
  std::string problem;
  if (h->ready.load(std::memory_order_acquire) == 0) {
    problem = "was never initialised by its creator";
  } else if (h->magic != kShmMagic || h->version != kShmVersion) {
    problem = "has an unknown format";
  } else if (h->nranks != static_cast<uint32_t>(nranks)) {
    problem = "was created for " + std::to_string(h->nranks) + " ranks, not " +
              std::to_string(nranks) + " (all ranks must pass the same nranks)";
  } else if (h->total_bytes != static_cast<uint64_t>(st.st_size)) {
    problem = "has an inconsistent size";
  }
  if (!problem.empty()) {
    munmap(p, static_cast<size_t>(st.st_size));
    *error = "segment " + name + " " + problem;
    return false;
  }
  *base = static_cast<uint8_t*>(p);
  *size = static_cast<size_t>(st.st_size);
  return true;
}

}  // namespace

std::shared_ptr<Segment> Segment::Open(const std::string& name, int nranks, std::string* error) {
  Registry& reg = GetRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.open.find(name);
  if (it != reg.open.end()) {
    if (std::shared_ptr<Segment> seg = it->second.lock()) {
      if (seg->nranks() != nranks) {
        *error = "communicator was created for " + std::to_string(seg->nranks()) + " ranks, not " +
                 std::to_string(nranks) + " (all ranks must pass the same nranks)";
        return nullptr;
      }
      return seg;
    }
    reg.open.erase(it);
  }
  uint8_t* base = nullptr;
  size_t size = 0;
  // Creating races with other processes: whoever loses attaches. The name cannot vanish between
  // the two attempts, because it is only unlinked once every rank (including us) has attached.
  int created = CreateSegment(name, nranks, &base, &size, error);
  if (created == -2) return nullptr;
  if (created == -1) {
    if (errno != EEXIST) {
      *error = "shm_open(" + name + "): " + strerror(errno);
      return nullptr;
    }
    if (!AttachSegment(name, nranks, &base, &size, error)) return nullptr;
  }
  std::shared_ptr<Segment> seg(new Segment(name, base, size));
  reg.open[name] = seg;
  return seg;
}

Segment::Segment(std::string name, uint8_t* base, size_t size)
    : name_(std::move(name)),
      base_(base),
      size_(size),
      header_(reinterpret_cast<ShmHeader*>(base)) {
  Layout l =
      ComputeLayout(static_cast<int>(header_->nranks), header_->slot_bytes, header_->p2p_bytes);
  ranks_offset_ = l.ranks_offset;
  staging_offset_ = l.staging_offset;
  p2p_offset_ = l.p2p_offset;
  channel_stride_ = l.channel_stride;
  ring_offset_ = RoundUp(sizeof(ShmP2p), 64);
}

Segment::~Segment() {
  {
    Registry& reg = GetRegistry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.open.find(name_);
    if (it != reg.open.end() && it->second.expired()) reg.open.erase(it);
  }
  munmap(base_, size_);
}

ShmRank* Segment::rank(int r) const {
  return reinterpret_cast<ShmRank*>(base_ + ranks_offset_) + r;
}

uint8_t* Segment::staging(int r, int buffer) const {
  size_t index = static_cast<size_t>(r) * 2 + static_cast<size_t>(buffer);
  return base_ + staging_offset_ + index * header_->slot_bytes;
}

ShmP2p* Segment::p2p(int src, int dst) const {
  size_t index =
      static_cast<size_t>(src) * static_cast<size_t>(nranks()) + static_cast<size_t>(dst);
  return reinterpret_cast<ShmP2p*>(base_ + p2p_offset_ + index * channel_stride_);
}

uint8_t* Segment::ring(int src, int dst) const {
  return reinterpret_cast<uint8_t*>(p2p(src, dst)) + ring_offset_;
}

void Segment::Unlink() {
  if (!unlinked_.exchange(true)) shm_unlink(name_.c_str());
}

std::string SegmentName(const uint8_t key[16]) {
  static const char kHex[] = "0123456789abcdef";
  std::string name = std::string("/") + kNamePrefix;
  for (int i = 0; i < 16; ++i) {
    name += kHex[key[i] >> 4];
    name += kHex[key[i] & 15];
  }
  return name;
}

namespace {

// True when the segment at `fd` may belong to live processes (or may still be being created).
bool SegmentInUse(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return true;
  bool old = time(nullptr) - st.st_mtime > kStaleAgeS;
  if (st.st_size < static_cast<off_t>(sizeof(ShmHeader))) return !old;
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return true;
  const auto* h = static_cast<const ShmHeader*>(p);
  bool in_use;
  if (h->ready.load(std::memory_order_acquire) == 0 || h->magic != kShmMagic ||
      h->version != kShmVersion || h->total_bytes != static_cast<uint64_t>(st.st_size)) {
    in_use = !old;
  } else {
    in_use = !ProcessGone(h->creator_pid, h->creator_pidns);
    Layout l = ComputeLayout(static_cast<int>(h->nranks), h->slot_bytes, h->p2p_bytes);
    const auto* ranks =
        reinterpret_cast<const ShmRank*>(static_cast<const uint8_t*>(p) + l.ranks_offset);
    for (uint32_t r = 0; r < h->nranks && !in_use; ++r) {
      if (ranks[r].present.load(std::memory_order_acquire) != 0) {
        in_use = !ProcessGone(ranks[r].pid, ranks[r].pidns);
      } else if (ranks[r].claimed.load(std::memory_order_acquire) != 0) {
        in_use = true;  // attaching right now
      }
    }
  }
  munmap(p, static_cast<size_t>(st.st_size));
  return in_use;
}

}  // namespace

uint64_t PidNamespace() {
  static const uint64_t ns = [] {
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0) return uint64_t{0};
    return (static_cast<uint64_t>(st.st_dev) << 32) ^ static_cast<uint64_t>(st.st_ino);
  }();
  return ns;
}

bool ProcessGone(int32_t pid, uint64_t pidns) {
  uint64_t own = PidNamespace();
  if (pid <= 0 || pidns == 0 || own == 0 || pidns != own) return false;  // cannot tell
  return kill(pid, 0) != 0 && errno == ESRCH;
}

void SweepStaleSegments() {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    if (strncmp(e->d_name, kNamePrefix, strlen(kNamePrefix)) != 0) continue;
    std::string name = std::string("/") + e->d_name;
    int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd < 0) continue;
    bool in_use = SegmentInUse(fd);
    close(fd);
    if (!in_use) {
      Debug("nccl: removing stale shared-memory segment %s", name.c_str());
      shm_unlink(name.c_str());
    }
  }
  closedir(dir);
}

}  // namespace nccl
}  // namespace xtsim

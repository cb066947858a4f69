// The demo jobs' NCCL unique id exchange through a shared directory: rank 0 calls
// ncclGetUniqueId and publishes the id atomically in $XTIMER_DEMO_RENDEZVOUS/nccl_unique_id
// (demo/launch.py sets the variable; docs/demo.md); every other rank waits for the file.
#ifndef XTIMER_DEMO_RENDEZVOUS_H_
#define XTIMER_DEMO_RENDEZVOUS_H_

#include <fcntl.h>
#include <nccl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace demo {

// Fills *id (world == 1: a fresh id, no directory needed). On failure returns false with a
// message that says what to do in *error; *exit_code is 2 for bad usage, else 1.
inline bool ShareNcclId(int rank, int world, int timeout_s, ncclUniqueId* id, std::string* error,
                        int* exit_code) {
  *exit_code = 1;
  if (world == 1 || rank == 0) {
    ncclResult_t res = ncclGetUniqueId(id);
    if (res != ncclSuccess) {
      *error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(res);
      return false;
    }
    if (world == 1) return true;
  }
  const char* dir = getenv("XTIMER_DEMO_RENDEZVOUS");
  if (dir == nullptr || *dir == '\0') {
    *exit_code = 2;
    *error = "XTIMER_DEMO_RENDEZVOUS is not set: with WORLD_SIZE > 1 it must name a directory "
             "shared by all ranks (demo/launch.py sets it)";
    return false;
  }
  const std::string path = std::string(dir) + "/nccl_unique_id";
  if (rank == 0) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = "cannot create " + tmp + ": " + strerror(errno) +
               " (XTIMER_DEMO_RENDEZVOUS must name an existing directory)";
      return false;
    }
    ssize_t n = write(fd, id, sizeof(*id));
    bool ok = n == static_cast<ssize_t>(sizeof(*id)) && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok) {
      *error = "cannot write " + tmp + ": " + strerror(saved);
      return false;
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
      *error = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
      return false;
    }
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (true) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, id, sizeof(*id));
      close(fd);
      if (n == static_cast<ssize_t>(sizeof(*id))) return true;
      *error = path + " holds " + std::to_string(n) + " bytes, expected " +
               std::to_string(sizeof(*id));
      return false;
    }
    if (errno != ENOENT) {
      *error = "cannot open " + path + ": " + strerror(errno);
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      *error = "rank 0 did not publish the NCCL unique id in " + path + " within " +
               std::to_string(timeout_s) +
               " s (did rank 0 start? --rendezvous-timeout changes the wait)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace demo

#endif  // XTIMER_DEMO_RENDEZVOUS_H_

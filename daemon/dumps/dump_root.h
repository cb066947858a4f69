// Race-free directory creation under the dump root (docs/control.md, "The dump root").
//
// The request path is checked with realpath when a dump is asked for, but a local user who can
// write inside the root could replace a directory with a symlink before the files are written.
// So the writer never resolves a path under the root by name: it opens the root once and walks
// the rest component by component with mkdirat + openat(O_DIRECTORY | O_NOFOLLOW), each step
// relative to the descriptor of the step before. A symlink anywhere below the root fails the
// walk (ELOOP / ENOTDIR) before anything is created through it.
#ifndef XTIMER_DAEMON_DUMP_ROOT_H_
#define XTIMER_DAEMON_DUMP_ROOT_H_

#include <cstddef>
#include <string>

namespace xtimer {
namespace daemon {

constexpr size_t kMaxPathBytes = 4096;  // a request's dump_path

// Resolves a request's dump_path `path` (absolute, or relative to the root) against the resolved
// dump root `root`: the deepest existing ancestor's real path (symlinks resolved) plus the rest
// must lie inside the root, and not in the daemon's own folders there (crash-*, oplog); ".."
// components are refused. Returns false with *error (naming dump_path).
bool ResolveDumpPath(const std::string& root, const std::string& path, std::string* resolved,
                     std::string* error);

// Opens the directory `dir` (absolute; `root` itself or under it, with no "." or ".."
// components), creating the missing directories below `root` with mode 0755. Returns an
// O_CLOEXEC directory descriptor that the caller closes, or -1 with *error naming the component
// that failed and why.
int OpenDirUnderRoot(const std::string& root, const std::string& dir, std::string* error);

// Creates and checks the dump root (daemon/base/owned_dir.h: every component, no symlink, owned by
// the daemon's user and not group- or world-writable) and sets *resolved to its normalized
// path. Returns false with *error naming the path and the fix.
bool PrepareDumpRoot(const std::string& root, std::string* resolved, std::string* error);

// What an interrupted dump left under the root (a daemon killed with -9 while writing).
struct Leftovers {
  int tmp_files = 0;    // NAME.tmp.PID files (timeline/timeline_io.h) of processes gone
  int empty_dirs = 0;   // directories that held only such files, or nothing (hang-* folders)
  int errors = 0;       // entries that could not be removed
};

// Removes, under `root` (at most kMaxLeftoverDepth levels down, never through a symlink), every
// NAME.tmp.PID file whose PID is not a live process, then every directory emptied by that and
// every empty automatic-dump folder (hang-*). The root itself stays.
constexpr int kMaxLeftoverDepth = 16;
Leftovers RemoveDumpLeftovers(const std::string& root);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_DUMP_ROOT_H_

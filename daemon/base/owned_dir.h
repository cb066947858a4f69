// Directories only the daemon's user controls: the run directory and the dump root
// (docs/security.md, "Files and directories").
//
// A root daemon that writes through a path some local user can change writes wherever that user
// likes: a symlink planted where the lock, the pid file or the log will be opened, or a run
// directory created first by someone else, would have it truncate any file on the machine. So
// the directory is opened component by component from "/" with openat(O_NOFOLLOW), missing
// components are created (mode 0755), and every component is checked on the descriptor opened:
//   - no component is a symlink;
//   - each parent belongs to root or to the daemon's user, and is not writable by group or
//     others unless sticky (/tmp: root-owned and sticky is fine);
//   - the directory itself belongs to the daemon's user and is not group- or world-writable.
// Files inside are then opened relative to the returned descriptor, with O_NOFOLLOW.
#ifndef XTIMER_DAEMON_OWNED_DIR_H_
#define XTIMER_DAEMON_OWNED_DIR_H_

#include <sys/types.h>

#include <string>

namespace xtimer {
namespace daemon {

struct OwnedDirSpec {
  std::string path;  // absolute; "." components are skipped, ".." refused
  std::string what;  // "run directory", "dump root": named in errors
  std::string flag;  // "--run-dir (XTIMER_RUN_DIR)": the fix named in errors
};

// Opens (creating what is missing) and checks `spec.path` for effective user `euid`. Returns an
// O_CLOEXEC directory descriptor the caller closes, or -1 with *error naming the path, what is
// wrong and how to fix it.
int OpenOwnedDir(const OwnedDirSpec& spec, uid_t euid, std::string* error);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OWNED_DIR_H_

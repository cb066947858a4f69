// Where xtimerd keeps its run directory (socket, lock, pid, log) and its dump root when no flag
// or XTIMER_* variable says otherwise: the one rule the daemon, the hook, the launcher and the CLI
// share (docs/security.md, "Default paths").
//
//   root:      /run/xtimer            and /var/lib/xtimer/dumps   (never world-writable /tmp)
//   user UID:  /tmp/xtimer-UID        and /tmp/xtimer-dumps-UID  (the daemon refuses them when
//              another user created them first: it checks owner and mode on every start)
//
// A process that is not root looks for a node daemon run by root first: when
// /run/xtimer/xtimerd.sock exists the hook and the launcher use /run/xtimer, else their own
// /tmp/xtimer-UID (ClientRunDir).
//
// Header only, no allocation beyond std::string: libxtimer.so uses it.
#ifndef XTIMER_UTIL_DEFAULT_PATHS_H_
#define XTIMER_UTIL_DEFAULT_PATHS_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace xtimer {

inline constexpr char kSystemRunDir[] = "/run/xtimer";
inline constexpr char kSystemDumpRoot[] = "/var/lib/xtimer/dumps";
inline constexpr char kUserRunDirPrefix[] = "/tmp/xtimer-";
inline constexpr char kUserDumpRootPrefix[] = "/tmp/xtimer-dumps-";
inline constexpr char kSocketName[] = "xtimerd.sock";

// The daemon's default run directory for effective user `euid`.
inline std::string DefaultRunDir(uid_t euid) {
  return euid == 0 ? std::string(kSystemRunDir) : kUserRunDirPrefix + std::to_string(euid);
}

// The daemon's default dump root for effective user `euid`.
inline std::string DefaultDumpRoot(uid_t euid) {
  return euid == 0 ? std::string(kSystemDumpRoot) : kUserDumpRootPrefix + std::to_string(euid);
}

// The run directory a client (hook, launcher) of user `euid` looks in when XTIMER_RUN_DIR is
// unset: root's daemon when its socket exists, else the user's own.
inline std::string ClientRunDir(uid_t euid) {
  if (euid != 0) {
    const std::string system_socket = std::string(kSystemRunDir) + "/" + kSocketName;
    struct stat st;
    if (lstat(system_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == 0) {
      return kSystemRunDir;
    }
  }
  return DefaultRunDir(euid);
}

}  // namespace xtimer

#endif  // XTIMER_UTIL_DEFAULT_PATHS_H_

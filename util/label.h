// The two kinds of label xtimer takes from processes it does not trust, and the one rule of each
// (docs/metrics.md "Labels"):
// - a job id (SanitizeJobId): bytes outside [A-Za-z0-9._-] become '_', cut to kMaxJobIdLength
//   bytes, and "", "." and ".." are not ids. Safe as a Prometheus label value, as a folder name
//   (dumps write DIR/<job>/) and in the ring's 64-byte field. File names made from a label (a hang
//   summary's host) take this rule too.
// - free text (SanitizeLabelText: a host or pod name, a kernel name): bytes outside printable
//   ASCII become '_'. Safe as a label value and in a log line, not as a path.
#ifndef XTIMER_UTIL_LABEL_H_
#define XTIMER_UTIL_LABEL_H_

#include <cstddef>
#include <string>

namespace xtimer {

// The ring header's job field holds 63 bytes and a NUL (format/ring.h).
constexpr size_t kMaxJobIdLength = 63;

// `raw` under the job-id rule; "" when nothing usable is left.
std::string SanitizeJobId(const std::string& raw);

// `raw` under the free-text rule.
std::string SanitizeLabelText(const std::string& raw);

}  // namespace xtimer

#endif  // XTIMER_UTIL_LABEL_H_

// Which timeline files a list of inputs names: shared by `xtimer timeline` and `xtimer analyze`.
// An input is a directory of *.timeline files (one node's), a single .timeline file, or a dump
// path holding job folders (DIR/JOB/*.timeline, as DumpKernelTrace writes), read folder by folder.
#ifndef XTIMER_TIMELINE_INPUTS_H_
#define XTIMER_TIMELINE_INPUTS_H_

#include <string>
#include <vector>

namespace xtimer {
namespace timeline {

struct InputFile {
  std::string path;
  std::string dir;  // the directory it was found in (the node's folder)
};

struct InputList {
  std::vector<InputFile> files;       // sorted by name within each directory
  std::vector<std::string> dirs;      // every directory files were listed from, in input order
  std::vector<std::string> skipped;   // "input: why" (missing, unreadable, no timeline files)
  std::vector<std::string> notes;     // a dump path's job folders, read one by one
};

InputList ListTimelineInputs(const std::vector<std::string>& inputs);

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_INPUTS_H_

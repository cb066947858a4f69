// xtimer: one binary, one subcommand per file (cli/<name>.cc). Adding a subcommand is one line
// in kCommands (plus its declaration in commands.h and its source in BUILD.bazel).
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "util/version.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int argc, char** argv);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"timeline", xtimer::cli::TimelineMain, "per-rank timeline files -> one Perfetto trace"},
    {"dump", xtimer::cli::DumpMain, "ask xtimerd on every node to dump per-rank timelines"},
    {"analyze", xtimer::cli::AnalyzeMain, "hang culprits, stragglers, true bus bandwidth"},
    {"diff", xtimer::cli::DiffMain, "compare two dumps per op signature, by impact on step time"},
    {"stacks", xtimer::cli::StacksMain, "per-rank stack files -> flame graph, rank-grouped summary"},
    {"report", xtimer::cli::ReportMain, "a dump -> one self-contained HTML report"},
};

void Usage(FILE* out) {
  std::fprintf(
      out, "usage: xtimer COMMAND [ARGS...]   (xtimer COMMAND --help for details;\n"
           "       xtimer --version)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    Usage(stdout);
    return 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::printf("%s\n", xtimer::kVersion);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) return c.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "xtimer: unknown command '%s'\n", argv[1]);
  Usage(stderr);
  return 2;
}

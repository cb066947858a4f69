// The one command-line parser (util/command_line.h): spellings, ranges, messages, environment
// defaults, positionals and a launcher's stop at the command.
#include "util/command_line.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace {

using Outcome = CommandLine::Outcome;

struct Parsed {
  Outcome outcome;
  std::string error;
  int next = -1;
};

Parsed Feed(const CommandLine& cl, std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  Parsed p;
  p.outcome = cl.Parse(static_cast<int>(args.size()), args.data(), &p.error, &p.next);
  return p;
}

struct Opts {
  bool json = false, align = true;
  std::string out;
  int64_t top = 0;
  int jobs = 0;
  double timeout = 10;
  std::vector<std::string> hosts, inputs;
};

CommandLine Table(Opts* o) {
  CommandLine cl;
  cl.Switch("--json", &o->json, "JSON");
  cl.SwitchOff("--no-align", &o->align, "no clock alignment");
  cl.Text("-o,--out", &o->out, "output file").Env("TEST_OUT");
  cl.Integer("--top", 1, 100, &o->top, "rows").Env("TEST_TOP");
  cl.Integer("-j,--jobs", 1, 1024, &o->jobs, "threads");
  cl.Number("--timeout", 0.1, 3600, &o->timeout, "seconds");
  cl.List("--hosts", &o->hosts, "hosts");
  cl.Custom("--host", "HOST", [o](const std::string& t, std::string* expected) {
    *expected = "a host name without spaces";
    if (t.find(' ') != std::string::npos) return false;
    o->hosts.push_back(t);
    return true;
  }, "one host");
  cl.Positionals(&o->inputs);
  return cl;
}

TEST(CommandLineTest, EverySpellingOfAValue) {
  Opts o;
  CommandLine cl = Table(&o);
  Parsed p = Feed(cl, {"--json", "-o", "a.json", "--top=7", "-j", "3", "--timeout", "0.5", "dir1",
                      "--hosts", "h1", "--hosts=h2", "--no-align", "dir2"});
  ASSERT_EQ(p.outcome, Outcome::kRun) << p.error;
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(o.align);
  EXPECT_EQ(o.out, "a.json");
  EXPECT_EQ(o.top, 7);
  EXPECT_EQ(o.jobs, 3);
  EXPECT_DOUBLE_EQ(o.timeout, 0.5);
  EXPECT_EQ(o.hosts, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"dir1", "dir2"}));
}

TEST(CommandLineTest, SwitchesTakeAnExplicitValue) {
  Opts o;
  o.json = true;
  CommandLine cl = Table(&o);
  ASSERT_EQ(Feed(cl, {"--json=false", "--no-align=no"}).outcome, Outcome::kRun);
  EXPECT_FALSE(o.json);
  EXPECT_TRUE(o.align);
  Parsed p = Feed(cl, {"--json=maybe"});
  EXPECT_EQ(p.outcome, Outcome::kBad);
  EXPECT_EQ(p.error, "--json must be true or false, not 'maybe'");
}

TEST(CommandLineTest, OneMessagePerKindOfMistake) {
  Opts o;
  CommandLine cl = Table(&o);
  EXPECT_EQ(Feed(cl, {"--frobnicate"}).error, "unknown option '--frobnicate'");
  EXPECT_EQ(Feed(cl, {"--top"}).error, "--top needs a value");
  EXPECT_EQ(Feed(cl, {"--out="}).error, "--out needs a value");
  EXPECT_EQ(Feed(cl, {"--top", "101"}).error, "--top must be a number from 1 to 100, not '101'");
  EXPECT_EQ(Feed(cl, {"-j", "2x"}).error, "-j must be a number from 1 to 1024, not '2x'");
  EXPECT_EQ(Feed(cl, {"--timeout=nan"}).error,
            "--timeout must be a number from 0.1 to 3600, not 'nan'");
  EXPECT_EQ(Feed(cl, {"--host", "a b"}).error,
            "--host must be a host name without spaces, not 'a b'");
  // A value out of range leaves the destination as it was.
  EXPECT_EQ(o.top, 0);
  CommandLine none;
  EXPECT_EQ(Feed(none, {"stray"}).error, "unexpected argument 'stray'");
}

TEST(CommandLineTest, HelpAndVersionWinWhereverTheyStand) {
  Opts o;
  CommandLine cl = Table(&o);
  EXPECT_EQ(Feed(cl, {"--top", "5", "-h"}).outcome, Outcome::kHelp);
  EXPECT_EQ(Feed(cl, {"--help"}).outcome, Outcome::kHelp);
  EXPECT_EQ(Feed(cl, {"dir", "--version"}).outcome, Outcome::kVersion);
}

TEST(CommandLineTest, DoubleDashEndsTheFlags) {
  Opts o;
  CommandLine cl = Table(&o);
  ASSERT_EQ(Feed(cl, {"--json", "--", "--top", "-x"}).outcome, Outcome::kRun);
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"--top", "-x"}));
  EXPECT_EQ(o.top, 0);
}

TEST(CommandLineTest, ALauncherStopsAtItsCommand) {
  std::string job;
  CommandLine cl;
  cl.Text("--job", &job);
  cl.StopAtPositional();
  Parsed p = Feed(cl, {"--job", "j1", "python3", "--job", "-h"});
  ASSERT_EQ(p.outcome, Outcome::kRun) << p.error;
  EXPECT_EQ(job, "j1");
  EXPECT_EQ(p.next, 3);  // argv[3] is python3
  p = Feed(cl, {"--", "--job"});
  ASSERT_EQ(p.outcome, Outcome::kRun);
  EXPECT_EQ(p.next, 2);
  p = Feed(cl, {"--job", "j2"});
  EXPECT_EQ(p.next, 3);  // nothing left: the caller says "no command"
}

TEST(CommandLineTest, EnvironmentGivesDefaultsTheCommandLineOverrides) {
  Opts o;
  CommandLine cl = Table(&o);
  std::map<std::string, std::string> env = {{"TEST_TOP", "9"}, {"TEST_OUT", ""}};
  auto getenv_fn = [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::string error;
  ASSERT_TRUE(cl.ApplyEnvironment(getenv_fn, &error)) << error;
  EXPECT_EQ(o.top, 9);
  EXPECT_EQ(o.out, "");  // set but empty: no default
  ASSERT_EQ(Feed(cl, {"--top", "4"}).outcome, Outcome::kRun);
  EXPECT_EQ(o.top, 4);
  env["TEST_TOP"] = "0";
  EXPECT_FALSE(cl.ApplyEnvironment(getenv_fn, &error));
  EXPECT_EQ(error, "environment variable TEST_TOP must be a number from 1 to 100, not '0'");
}

TEST(CommandLineTest, FlagHelpListsEveryFlagWithItsPlaceholderAndVariable) {
  Opts o;
  CommandLine cl = Table(&o);
  const std::string help = cl.FlagHelp();
  EXPECT_NE(help.find("  -o, --out S"), std::string::npos) << help;
  EXPECT_NE(help.find("output file [TEST_OUT]"), std::string::npos) << help;
  EXPECT_NE(help.find("  --host HOST"), std::string::npos) << help;
  EXPECT_NE(help.find("  --json "), std::string::npos) << help;
  const std::vector<std::string> names = cl.Names();
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(names[2], "-o");
  EXPECT_EQ(names[3], "--out");
}

TEST(CommandLineTest, FlagHelpWrapsAtTheWidthUnderTheHelpColumn) {
  int n = 0;
  bool b = false;
  CommandLine cl;
  cl.Integer("-n,--number", 0, 9, &n,
             "a number of things, written out at such length that it cannot fit in one line");
  cl.Switch("--a-very-long-switch-name", &b, "short");
  const std::string help = cl.FlagHelp(20, 60);
  std::string out;
  cl.Text("--out", &out, "where").Placeholder("FILE");
  EXPECT_NE(cl.FlagHelp(20, 60).find("  --out FILE         where\n"), std::string::npos);
  EXPECT_EQ(help,
            "  -n, --number N     a number of things, written out at such\n"
            "                     length that it cannot fit in one line\n"
            "  --a-very-long-switch-name\n"
            "                     short\n")
      << help;
}

TEST(CommandLineTest, NumbersAreWholeAndInRange) {
  double d = 0;
  int64_t i = 0;
  bool b = false;
  EXPECT_TRUE(ParseNumber("2.5", 0, 3, &d));
  EXPECT_FALSE(ParseNumber("2.5s", 0, 3, &d));
  EXPECT_FALSE(ParseNumber("", 0, 3, &d));
  EXPECT_FALSE(ParseNumber("inf", 0, 1e300, &d));
  EXPECT_TRUE(ParseInteger("-3", -5, 5, &i));
  EXPECT_EQ(i, -3);
  EXPECT_FALSE(ParseInteger("99999999999999999999", 0, INT64_MAX, &i));
  EXPECT_FALSE(ParseInteger("0x10", 0, 100, &i));
  EXPECT_TRUE(ParseSwitch("yes", &b));
  EXPECT_TRUE(b);
  EXPECT_FALSE(ParseSwitch("on", &b));
}

}  // namespace
}  // namespace xtimer

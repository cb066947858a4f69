// libFuzzer target for the control service's JSON entry (HandleJson, control_json.h): the first
// byte picks the method, the rest is the body. Dumps go under a private temporary dump root and
// there are no registered processes, so a valid request writes nothing.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "daemon/control/control_handler.h"
#include "daemon/control/control_json.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/model/aggregator.h"

namespace {

struct World {
  World() {
    char tmpl[] = "/tmp/xtimer-control-fuzz-XXXXXX";
    std::string error;
    if (mkdtemp(tmpl) == nullptr || !xtimer::daemon::PrepareDumpRoot(tmpl, &root, &error)) abort();
    aggregator = std::make_unique<xtimer::daemon::Aggregator>(xtimer::daemon::AggregatorOptions());
    dumps = std::make_unique<xtimer::daemon::DumpManager>(aggregator.get(), root, "fuzz",
                                                          [] { return int64_t{1700000000} * 1000000000; });
    xtimer::daemon::ControlOptions o;
    o.node = "fuzz";
    o.now_ns = [] { return int64_t{1700000000} * 1000000000; };
    handler = std::make_unique<xtimer::daemon::ControlHandler>(aggregator.get(), dumps.get(), o);
  }
  std::string root;
  std::unique_ptr<xtimer::daemon::Aggregator> aggregator;
  std::unique_ptr<xtimer::daemon::DumpManager> dumps;
  std::unique_ptr<xtimer::daemon::ControlHandler> handler;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  static const char* kMethods[] = {"DumpKernelTrace", "Status", "Nope"};
  if (size == 0) return 0;
  const std::string method = kMethods[data[0] % 3];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string json;
  const int status = xtimer::daemon::HandleJson(world->handler.get(), method, body, &json);
  if (status != 200 && status != 400 && status != 404 && status != 409 && status != 413) abort();
  if (json.empty()) abort();
  return 0;
}

#include "daemon/export/refusal_metrics.h"

namespace xtimer {
namespace daemon {

RefusalCollector::RefusalCollector(std::string name, std::string help)
    : name_(std::move(name)), help_(std::move(help)) {}

void RefusalCollector::Add(std::pair<std::string, std::string> label, const RefusalLog* log) {
  std::lock_guard<std::mutex> lock(mu_);
  sources_.emplace_back(std::move(label), log);
}

std::vector<prometheus::MetricFamily> RefusalCollector::Collect() const {
  prometheus::MetricFamily f;
  f.name = name_;
  f.help = help_;
  f.type = prometheus::MetricType::Counter;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& source : sources_) {
    for (const auto& cause : source.second->counts()) {
      prometheus::ClientMetric m;
      m.label = {{source.first.first, source.first.second}, {"cause", cause.first}};
      m.counter.value = static_cast<double>(cause.second);
      f.metric.push_back(std::move(m));
    }
  }
  return {std::move(f)};
}

}  // namespace daemon
}  // namespace xtimer

#include "test/gpusim/cudart/kernels.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <regex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "test/gpusim/common/sim_env.h"

namespace xtsim {
namespace {

struct DurationRule {
  std::regex pattern;
  int64_t ns;
};

// XTIMER_SIM_KERNEL_TIMES="REGEX=MICROSECONDS;REGEX=MICROSECONDS", matched (std::regex_search)
// against the demangled name; the first match wins. Others take XTIMER_SIM_KERNEL_TIME_US.
std::vector<DurationRule> ParseRules() {
  std::vector<DurationRule> rules;
  const char* v = getenv("XTIMER_SIM_KERNEL_TIMES");
  if (v == nullptr || *v == '\0') return rules;
  std::string all(v);
  size_t pos = 0;
  while (pos < all.size()) {
    size_t semi = all.find(';', pos);
    std::string item = all.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
    pos = semi == std::string::npos ? all.size() : semi + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      Fatal("XTIMER_SIM_KERNEL_TIMES: entry '%s' is not REGEX=MICROSECONDS", item.c_str());
    }
    char* end = nullptr;
    double us = strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || us < 0) {
      Fatal("XTIMER_SIM_KERNEL_TIMES: '%s' in entry '%s' is not a duration in microseconds",
            item.c_str() + eq + 1, item.c_str());
    }
    try {
      rules.push_back({std::regex(item.substr(0, eq)), static_cast<int64_t>(us * 1000)});
    } catch (const std::regex_error& e) {
      Fatal("XTIMER_SIM_KERNEL_TIMES: bad regular expression '%s': %s",
            item.substr(0, eq).c_str(), e.what());
    }
  }
  return rules;
}

int64_t DurationFor(const std::string& name) {
  static const std::vector<DurationRule> rules = ParseRules();
  static const int64_t default_ns = [] {
    double us = EnvDouble("XTIMER_SIM_KERNEL_TIME_US", 10.0);
    if (us < 0) Fatal("XTIMER_SIM_KERNEL_TIME_US=%g must not be negative", us);
    return static_cast<int64_t>(us * 1000);
  }();
  for (const DurationRule& r : rules) {
    if (std::regex_search(name, r.pattern)) return r.ns;
  }
  return default_ns;
}

std::string Demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string s(out);
  free(out);
  return s;
}

struct KernelRegistry {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<KernelInfo>> by_host_fun;
  std::unordered_set<const void*> handles;
  std::vector<std::unique_ptr<KernelInfo>> module_kernels;
};

std::unique_ptr<KernelInfo> NewKernel(const void* host_fun, const char* device_name) {
  auto k = std::make_unique<KernelInfo>();
  k->host_fun = host_fun;
  k->mangled = device_name != nullptr ? device_name : "";
  k->demangled = Demangle(k->mangled.c_str());
  k->duration_ns = DurationFor(k->demangled);
  return k;
}

KernelRegistry& Registry() {
  static KernelRegistry* r = new KernelRegistry();
  return *r;
}

}  // namespace

const KernelInfo* RegisterKernel(const void* host_fun, const char* device_name) {
  KernelRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& slot = r.by_host_fun[host_fun];
  if (slot == nullptr) {
    slot = NewKernel(host_fun, device_name);
    r.handles.insert(slot.get());
  }
  return slot.get();
}

const KernelInfo* RegisterModuleKernel(const char* device_name) {
  std::unique_ptr<KernelInfo> k = NewKernel(nullptr, device_name);
  KernelRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.module_kernels.push_back(std::move(k));
  return r.module_kernels.back().get();
}

const KernelInfo* FindKernel(const void* host_fun) {
  KernelRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_host_fun.find(host_fun);
  return it == r.by_host_fun.end() ? nullptr : it->second.get();
}

const KernelInfo* FindKernelHandle(const void* handle) {
  KernelRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.handles.count(handle) != 0 ? static_cast<const KernelInfo*>(handle) : nullptr;
}

}  // namespace xtsim

#include "test/gpusim/cublas/object_registry.h"

namespace xtsim {
namespace blas {

void ObjectRegistry::Add(const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(p);
  for (const void*& r : removed_) {
    if (r == p) r = nullptr;
  }
}

bool ObjectRegistry::Remove(const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_.erase(p) == 0) return false;
  removed_[next_removed_] = p;
  next_removed_ = (next_removed_ + 1) % kRemembered;
  return true;
}

bool ObjectRegistry::Contains(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(p) != 0;
}

bool ObjectRegistry::RecentlyRemoved(const void* p) const {
  if (p == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const void* r : removed_) {
    if (r == p) return true;
  }
  return false;
}

void ObjectRegistry::ForgetRemoved(const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const void*& r : removed_) {
    if (r == p) r = nullptr;
  }
}

}  // namespace blas
}  // namespace xtsim

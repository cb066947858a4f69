#include "hook/kernel_table.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

namespace xtimer {
namespace hook {

std::string Demangle(const char* mangled) {
  if (mangled == nullptr) return std::string();
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    free(out);
    return mangled;
  }
  std::string s(out);
  free(out);
  return s;
}

bool KernelTable::SetFilter(const std::string& filter) {
  filter_enabled_ = false;
  filter_.reset();
  if (filter.empty()) {
    filter_enabled_ = true;  // every kernel
    return true;
  }
  try {
    filter_.reset(new std::regex(filter, std::regex::ECMAScript | std::regex::optimize));
  } catch (const std::regex_error&) {
    return false;
  }
  filter_enabled_ = true;
  return true;
}

bool KernelTable::Put(Slot* table, const void* key, uintptr_t value) {
  size_t i = SlotOf(key);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    const void* k = table[i].key.load(std::memory_order_relaxed);
    if (k == key) {
      table[i].value.store(value, std::memory_order_relaxed);
      return true;
    }
    if (k == nullptr) {
      table[i].value.store(value, std::memory_order_relaxed);
      table[i].key.store(key, std::memory_order_release);  // publishes the value
      return true;
    }
  }
  return false;  // full: the key stays unknown; callers treat it as "not timed"
}

void KernelTable::MapHandle(const void* handle, const void* function) {
  if (handle == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  Put(handles_.get(), handle, reinterpret_cast<uintptr_t>(function));
}

const void* KernelTable::FunctionOf(const void* handle) const {
  uintptr_t v = 0;
  if (!Find(handles_.get(), handle, &v)) return nullptr;
  return reinterpret_cast<const void*>(v);
}

bool KernelTable::Classify(const void* function, const char* mangled, uint32_t* name_id) {
  std::string name = mangled != nullptr ? Demangle(mangled) : std::string();
  if (name.empty()) {
    char buf[32];
    snprintf(buf, sizeof(buf), "kernel@%p", function);
    name = buf;
  }
  bool timed = filter_enabled_ && (filter_ == nullptr || std::regex_search(name, *filter_));
  std::lock_guard<std::mutex> lock(mu_);
  uintptr_t v = 0;
  if (Find(functions_.get(), function, &v)) {  // another thread won
    if (v == 1) return false;
    *name_id = static_cast<uint32_t>(v >> 1);
    return true;
  }
  if (!timed) {
    Put(functions_.get(), function, 1);
    return false;
  }
  const bool named = names_.size() < kMaxNames;
  *name_id = named ? static_cast<uint32_t>(names_.size() + 1) : 0;
  if (!Put(functions_.get(), function, static_cast<uintptr_t>(*name_id) << 1)) return false;
  if (named) names_.push_back(name);
  return true;
}

void KernelTable::Alias(const void* alias, const void* function) {
  std::lock_guard<std::mutex> lock(mu_);
  uintptr_t v = 0;
  if (Find(functions_.get(), function, &v)) Put(functions_.get(), alias, v);
}

std::string KernelTable::Name(uint32_t name_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name_id == 0 || name_id > names_.size()) return std::string();
  return names_[name_id - 1];
}

}  // namespace hook
}  // namespace xtimer

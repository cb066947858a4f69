// A second NVTX consumer for tests (libnvtx_counter.so): an NVTX v3 injection library of its own
// that counts what it receives and, at exit, writes the counts to $NVTX_COUNTER_OUT, one
// "KEY COUNT" line each (push:MESSAGE, pop, mark:MESSAGE, start:MESSAGE, end, domain:NAME,
// register:TEXT, domain_push:TEXT, domain_pop, bad_handle). Its push and pop return 100 plus
// the thread's level, so a test can tell its values from xtimer's. Its domain and string handles
// point into its own tables: a handle it did not hand out counts as bad_handle.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex g_mu;
std::map<std::string, int>* g_counts = new std::map<std::string, int>;  // never freed
thread_local int t_level = 0;

struct Handle {
  unsigned magic;
  std::string text;
};
constexpr unsigned kMagic = 0x4e565443;
std::vector<Handle*>* g_handles = new std::vector<Handle*>;  // every handle made, never freed

Handle* NewHandle(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_handles->push_back(new Handle{kMagic, text});
  return g_handles->back();
}

void Count(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++(*g_counts)[key];
}

const Handle* Mine(const void* h) {
  auto* p = static_cast<const Handle*>(h);
  if (p == nullptr || p->magic != kMagic) {
    Count("bad_handle");
    return nullptr;
  }
  return p;
}

int PushA(const char* m) {
  Count(std::string("push:") + m);
  return 100 + t_level++;
}
int Pop() {
  Count("pop");
  return 100 + --t_level;
}
void MarkA(const char* m) { Count(std::string("mark:") + m); }
nvtxRangeId_t StartA(const char* m) {
  Count(std::string("start:") + m);
  return 7000;
}
void End(nvtxRangeId_t id) { Count("end:" + std::to_string(id)); }
nvtxDomainHandle_t DomainCreateA(const char* name) {
  Count(std::string("domain:") + name);
  return reinterpret_cast<nvtxDomainHandle_t>(NewHandle(name));
}
nvtxStringHandle_t RegisterA(nvtxDomainHandle_t d, const char* text) {
  Mine(d);
  Count(std::string("register:") + text);
  return reinterpret_cast<nvtxStringHandle_t>(NewHandle(text));
}
int DomainPushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Mine(d);
  const Handle* s = a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? Mine(a->message.registered)
                                                                   : nullptr;
  Count("domain_push:" + (s != nullptr ? s->text : std::string("?")));
  return 100 + t_level++;
}
int DomainPop(nvtxDomainHandle_t d) {
  Mine(d);
  Count("domain_pop");
  return 100 + --t_level;
}

template <typename Fn>
void Set(NvtxFunctionTable t, unsigned n, unsigned id, Fn fn) {
  if (id <= n && t[id] != nullptr) *t[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

__attribute__((destructor)) void WriteCounts() {
  const char* path = getenv("NVTX_COUNTER_OUT");
  if (path == nullptr) return;
  FILE* f = fopen(path, "w");
  if (f == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& kv : *g_counts) fprintf(f, "%s %d\n", kv.first.c_str(), kv.second);
  fclose(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  auto cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (cb == nullptr || cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) == 0) return 0;
  Count("init");
  Set(t, n, NVTX_CBID_CORE_RangePushA, &PushA);
  Set(t, n, NVTX_CBID_CORE_RangePop, &Pop);
  Set(t, n, NVTX_CBID_CORE_MarkA, &MarkA);
  Set(t, n, NVTX_CBID_CORE_RangeStartA, &StartA);
  Set(t, n, NVTX_CBID_CORE_RangeEnd, &End);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) == 0) return 0;
  Set(t, n, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
  Set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &RegisterA);
  Set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &DomainPushEx);
  Set(t, n, NVTX_CBID_CORE2_DomainRangePop, &DomainPop);
  return 1;
}

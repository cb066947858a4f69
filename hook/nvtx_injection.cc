// libxtimer.so as an NVTX v3 injection library (docs/hook.md "NVTX").
//
// NVTX v3 is header-only: every module of the application that uses it carries its own copy of
// the NVTX globals, and the first NVTX call of each copy loads the library named by
// NVTX_INJECTION64_PATH and calls its exported InitializeInjectionNvtx2(getExportTable)
// (nvtx3/nvtxDetail/nvtxInit.h). The injection asks getExportTable(NVTX_ETID_CALLBACKS) for
// GetModuleFunctionTable, which hands out, per module (CORE, CORE2, ...), the array of the
// copy's function-pointer slots indexed by callback id (nvtxDetail/nvtxTypes.h); the slots the
// injection fills are called from then on, the others become no-ops. xtimer-launch sets the
// variable to libxtimer.so, which is already loaded (LD_PRELOAD), so dlopen returns it.
//
// Another consumer (Nsight Systems' injection, ...): when XTIMER_NVTX_FORWARD names a library
// (xtimer-launch moves the user's own NVTX_INJECTION64_PATH there), it is initialised once with
// a proxy export table of ours, so it fills our copy of the CORE and CORE2 slots (other modules
// it gets from the application's first NVTX copy directly). Each of our functions calls its
// slot, with domains and registered strings translated to the consumer's handles, and returns
// the consumer's value (levels, range ids, handles are the consumer's when there is one).
// Recording off (XTIMER_DISABLE, XTIMER_NVTX=0): the consumer gets the application's tables
// directly, and without a consumer the injection declines (NVTX turns every call into a no-op).
//
// The hook's own time: each range, mark and start/end callback reads the clock first (its
// record's time) and once more when its own part is done (budget::ChargeSince: the hook's own
// time, xtimer_hook_overhead_seconds_total, and the thread's overhead budget). The forwarded
// consumer's calls are left out; naming, registration and domain calls (cold) are not counted.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "hook/budget.h"
#include "hook/log.h"
#include "hook/nvtx_recorder.h"
#include "hook/recorder.h"
#include "hook/resolve.h"
#include "util/clock.h"

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

namespace xtimer {
namespace hook {
namespace {

using nvtx::Attrs;

// Our handles: the application holds these, the forwarded consumer gets its own. Both stay
// listed (g_handles) while they live: registered strings until the process ends, domains until
// nvtxDomainDestroy.
struct Domain {
  uint32_t name_id;
  nvtxDomainHandle_t downstream;
  Domain* next;
};
struct RegisteredString {
  uint32_t id;
  nvtxStringHandle_t downstream;
  RegisteredString* next;
};
struct Handles {
  std::mutex mu;
  Domain* domains = nullptr;
  RegisteredString* strings = nullptr;
};
Handles* g_handles = new Handles;  // never freed: handles are used until exit

// The forwarded consumer's CORE and CORE2 functions, as it filled them through our proxy table.
struct Downstream {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* core_slots[NVTX_CBID_CORE_SIZE + 1] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core2_slots[NVTX_CBID_CORE2_SIZE + 1] = {};
  NvtxGetExportTableFunc_t app_table = nullptr;  // the first NVTX copy's (other modules)
  NvtxExportTableCallbacks callbacks = {};
  NvtxInitializeInjectionNvtxFunc_t init = nullptr;
  bool tried = false;
  bool recording = false;
  bool initialised = false;
};
Downstream g_down;
std::mutex g_nvtx_init_mu;

template <typename Fn>
inline Fn Core(NvtxCallbackIdCore id) {
  return reinterpret_cast<Fn>(g_down.core[id]);
}
template <typename Fn>
inline Fn Core2(NvtxCallbackIdCore2 id) {
  return reinterpret_cast<Fn>(g_down.core2[id]);
}

// ------------------------------------------------------------------------- decoding messages

// A wide (UTF-32) message as UTF-8, cut to fit `out`.
void ToUtf8(const wchar_t* w, char* out, size_t size) {
  size_t n = 0;
  for (; w != nullptr && *w != 0; ++w) {
    const uint32_t c = static_cast<uint32_t>(*w);
    const size_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n + len >= size) break;
    if (len == 1) {
      out[n++] = static_cast<char>(c);
      continue;
    }
    const uint8_t lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
    out[n] = static_cast<char>(lead[len] | (c >> (6 * (len - 1))));
    for (size_t i = 1; i < len; ++i) {
      out[n + i] = static_cast<char>(0x80 | ((c >> (6 * (len - 1 - i))) & 0x3f));
    }
    n += len;
  }
  out[n] = '\0';
}

uint32_t InternWide(const wchar_t* w) {
  char buf[512];
  ToUtf8(w, buf, sizeof(buf));
  return nvtx::Intern(buf);
}

uint32_t DomainId(nvtxDomainHandle_t d) {
  return d == nullptr ? 0 : reinterpret_cast<const Domain*>(d)->name_id;
}
nvtxDomainHandle_t DownDomain(nvtxDomainHandle_t d) {
  return d == nullptr ? nullptr : reinterpret_cast<const Domain*>(d)->downstream;
}

Attrs Decode(const nvtxEventAttributes_t* a) {
  Attrs out;
  if (a == nullptr) return out;
  out.category = a->category;
  if (a->colorType == NVTX_COLOR_ARGB) {
    out.color = a->color;
    out.flags |= format::kNvtxHasColor;
  }
  if (a->payloadType != NVTX_PAYLOAD_UNKNOWN) {
    out.payload_type = static_cast<uint8_t>(a->payloadType);
    out.payload = a->payload.ullValue;
    out.flags |= format::kNvtxHasPayload;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: out.name_id = nvtx::Intern(a->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: out.name_id = InternWide(a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (a->message.registered != nullptr) {
        out.name_id = reinterpret_cast<const RegisteredString*>(a->message.registered)->id;
      }
      break;
    default: break;
  }
  return out;
}

// The attributes as the consumer must see them: its own handle for a registered string.
nvtxEventAttributes_t ForDownstream(const nvtxEventAttributes_t* a) {
  nvtxEventAttributes_t copy;
  std::memcpy(&copy, a, sizeof(copy));
  if (copy.messageType == NVTX_MESSAGE_TYPE_REGISTERED && copy.message.registered != nullptr) {
    copy.message.registered =
        reinterpret_cast<const RegisteredString*>(copy.message.registered)->downstream;
  }
  return copy;
}

// ------------------------------------------------------------------- the CORE module (no domain)

void MarkEx(const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  nvtx::Mark(0, Decode(a), now);
  budget::ChargeSince(now);
  if (auto f = Core<nvtxMarkEx_impl_fntype>(NVTX_CBID_CORE_MarkEx)) {
    if (a == nullptr) return f(a);
    const nvtxEventAttributes_t d = ForDownstream(a);
    f(&d);
  }
}

Attrs Message(uint32_t name_id) {
  Attrs a;
  a.name_id = name_id;
  return a;
}

void MarkA(const char* m) {
  const int64_t now = RealtimeNs();
  nvtx::Mark(0, Message(nvtx::Intern(m)), now);
  budget::ChargeSince(now);
  if (auto f = Core<nvtxMarkA_impl_fntype>(NVTX_CBID_CORE_MarkA)) f(m);
}

void MarkW(const wchar_t* m) {
  const int64_t now = RealtimeNs();
  nvtx::Mark(0, Message(InternWide(m)), now);
  budget::ChargeSince(now);
  if (auto f = Core<nvtxMarkW_impl_fntype>(NVTX_CBID_CORE_MarkW)) f(m);
}

// A start/end range's id: the consumer's (`forward()`, when `forwarding`), else ours. The range
// starts at `now`, the callback's first clock read.
template <typename Forward>
nvtxRangeId_t StartWith(bool forwarding, Forward forward, uint32_t domain_id, const Attrs& attrs,
                        int64_t now) {
  if (!forwarding) {
    const nvtxRangeId_t id = nvtx::NextRangeId();
    nvtx::Start(domain_id, attrs, id, now);
    budget::ChargeSince(now);
    return id;
  }
  budget::ChargeSince(now);  // decoding; the consumer's call is not the hook's time
  const nvtxRangeId_t id = forward();
  const int64_t after = RealtimeNs();
  nvtx::Start(domain_id, attrs, id, now);
  budget::ChargeSince(after);
  return id;
}

nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  auto f = Core<nvtxRangeStartEx_impl_fntype>(NVTX_CBID_CORE_RangeStartEx);
  auto forward = [f, a] {
    if (a == nullptr) return f(a);
    const nvtxEventAttributes_t d = ForDownstream(a);
    return f(&d);
  };
  return StartWith(f != nullptr, forward, 0, Decode(a), now);
}

nvtxRangeId_t RangeStartA(const char* m) {
  const int64_t now = RealtimeNs();
  auto f = Core<nvtxRangeStartA_impl_fntype>(NVTX_CBID_CORE_RangeStartA);
  return StartWith(f != nullptr, [f, m] { return f(m); }, 0, Message(nvtx::Intern(m)), now);
}

nvtxRangeId_t RangeStartW(const wchar_t* m) {
  const int64_t now = RealtimeNs();
  auto f = Core<nvtxRangeStartW_impl_fntype>(NVTX_CBID_CORE_RangeStartW);
  return StartWith(f != nullptr, [f, m] { return f(m); }, 0, Message(InternWide(m)), now);
}

void RangeEnd(nvtxRangeId_t id) {
  const int64_t now = RealtimeNs();
  nvtx::End(0, id, now);
  budget::ChargeSince(now);
  if (auto f = Core<nvtxRangeEnd_impl_fntype>(NVTX_CBID_CORE_RangeEnd)) f(id);
}

// A push's level: the consumer's when there is one, else ours. The range starts at `now`, the
// callback's first clock read.
template <typename Fn, typename Arg>
int PushWith(Fn f, Arg arg, uint32_t domain_id, const Attrs& attrs, int64_t now) {
  const int level = nvtx::Push(domain_id, attrs, now);
  budget::ChargeSince(now);
  return f != nullptr ? f(arg) : level;
}

int RangePushEx(const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  auto f = Core<nvtxRangePushEx_impl_fntype>(NVTX_CBID_CORE_RangePushEx);
  if (f == nullptr || a == nullptr) return PushWith(f, a, 0, Decode(a), now);
  const nvtxEventAttributes_t d = ForDownstream(a);
  return PushWith(f, &d, 0, Decode(a), now);
}

int RangePushA(const char* m) {
  const int64_t now = RealtimeNs();
  return PushWith(Core<nvtxRangePushA_impl_fntype>(NVTX_CBID_CORE_RangePushA), m, 0,
                  Message(nvtx::Intern(m)), now);
}

int RangePushW(const wchar_t* m) {
  const int64_t now = RealtimeNs();
  return PushWith(Core<nvtxRangePushW_impl_fntype>(NVTX_CBID_CORE_RangePushW), m, 0,
                  Message(InternWide(m)), now);
}

int RangePop() {
  const int64_t now = RealtimeNs();
  const int level = nvtx::Pop(0, now);
  budget::ChargeSince(now);
  auto f = Core<nvtxRangePop_impl_fntype>(NVTX_CBID_CORE_RangePop);
  return f != nullptr ? f() : level;
}

// Naming calls are the consumer's business only.
void NameCategoryA(uint32_t c, const char* n) {
  if (auto f = Core<nvtxNameCategoryA_impl_fntype>(NVTX_CBID_CORE_NameCategoryA)) f(c, n);
}
void NameCategoryW(uint32_t c, const wchar_t* n) {
  if (auto f = Core<nvtxNameCategoryW_impl_fntype>(NVTX_CBID_CORE_NameCategoryW)) f(c, n);
}
void NameOsThreadA(uint32_t t, const char* n) {
  if (auto f = Core<nvtxNameOsThreadA_impl_fntype>(NVTX_CBID_CORE_NameOsThreadA)) f(t, n);
}
void NameOsThreadW(uint32_t t, const wchar_t* n) {
  if (auto f = Core<nvtxNameOsThreadW_impl_fntype>(NVTX_CBID_CORE_NameOsThreadW)) f(t, n);
}

// ---------------------------------------------------------------- the CORE2 module (domains)

void DomainMarkEx(nvtxDomainHandle_t dom, const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  nvtx::Mark(DomainId(dom), Decode(a), now);
  budget::ChargeSince(now);
  if (auto f = Core2<nvtxDomainMarkEx_impl_fntype>(NVTX_CBID_CORE2_DomainMarkEx)) {
    if (a == nullptr) return f(DownDomain(dom), a);
    const nvtxEventAttributes_t d = ForDownstream(a);
    f(DownDomain(dom), &d);
  }
}

nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t dom, const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  auto f = Core2<nvtxDomainRangeStartEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangeStartEx);
  auto forward = [f, dom, a] {
    if (a == nullptr) return f(DownDomain(dom), a);
    const nvtxEventAttributes_t d = ForDownstream(a);
    return f(DownDomain(dom), &d);
  };
  return StartWith(f != nullptr, forward, DomainId(dom), Decode(a), now);
}

void DomainRangeEnd(nvtxDomainHandle_t dom, nvtxRangeId_t id) {
  const int64_t now = RealtimeNs();
  nvtx::End(DomainId(dom), id, now);
  budget::ChargeSince(now);
  auto f = Core2<nvtxDomainRangeEnd_impl_fntype>(NVTX_CBID_CORE2_DomainRangeEnd);
  if (f != nullptr) f(DownDomain(dom), id);
}

int DomainRangePushEx(nvtxDomainHandle_t dom, const nvtxEventAttributes_t* a) {
  const int64_t now = RealtimeNs();
  const int level = nvtx::Push(DomainId(dom), Decode(a), now);
  budget::ChargeSince(now);
  auto f = Core2<nvtxDomainRangePushEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangePushEx);
  if (f == nullptr) return level;
  if (a == nullptr) return f(DownDomain(dom), a);
  const nvtxEventAttributes_t d = ForDownstream(a);
  return f(DownDomain(dom), &d);
}

int DomainRangePop(nvtxDomainHandle_t dom) {
  const int64_t now = RealtimeNs();
  const int level = nvtx::Pop(DomainId(dom), now);
  budget::ChargeSince(now);
  auto f = Core2<nvtxDomainRangePop_impl_fntype>(NVTX_CBID_CORE2_DomainRangePop);
  return f != nullptr ? f(DownDomain(dom)) : level;
}

nvtxResourceHandle_t DomainResourceCreate(nvtxDomainHandle_t dom, nvtxResourceAttributes_t* a) {
  auto f = Core2<nvtxDomainResourceCreate_impl_fntype>(NVTX_CBID_CORE2_DomainResourceCreate);
  return f != nullptr ? f(DownDomain(dom), a) : nullptr;
}

void DomainResourceDestroy(nvtxResourceHandle_t r) {
  auto f = Core2<nvtxDomainResourceDestroy_impl_fntype>(NVTX_CBID_CORE2_DomainResourceDestroy);
  if (f != nullptr) f(r);
}

void DomainNameCategoryA(nvtxDomainHandle_t dom, uint32_t c, const char* n) {
  auto f = Core2<nvtxDomainNameCategoryA_impl_fntype>(NVTX_CBID_CORE2_DomainNameCategoryA);
  if (f != nullptr) f(DownDomain(dom), c, n);
}

void DomainNameCategoryW(nvtxDomainHandle_t dom, uint32_t c, const wchar_t* n) {
  auto f = Core2<nvtxDomainNameCategoryW_impl_fntype>(NVTX_CBID_CORE2_DomainNameCategoryW);
  if (f != nullptr) f(DownDomain(dom), c, n);
}

// Registration (cold): our handle wraps the string's id and the consumer's handle.
nvtxStringHandle_t NewString(uint32_t id, nvtxStringHandle_t downstream) {
  std::lock_guard<std::mutex> lock(g_handles->mu);
  g_handles->strings = new RegisteredString{id, downstream, g_handles->strings};
  return reinterpret_cast<nvtxStringHandle_t>(g_handles->strings);
}

nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t dom, const char* text) {
  auto f = Core2<nvtxDomainRegisterStringA_impl_fntype>(NVTX_CBID_CORE2_DomainRegisterStringA);
  return NewString(nvtx::Intern(text), f != nullptr ? f(DownDomain(dom), text) : nullptr);
}

nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t dom, const wchar_t* text) {
  auto f = Core2<nvtxDomainRegisterStringW_impl_fntype>(NVTX_CBID_CORE2_DomainRegisterStringW);
  return NewString(InternWide(text), f != nullptr ? f(DownDomain(dom), text) : nullptr);
}

nvtxDomainHandle_t NewDomain(uint32_t name_id, nvtxDomainHandle_t downstream) {
  std::lock_guard<std::mutex> lock(g_handles->mu);
  g_handles->domains = new Domain{name_id, downstream, g_handles->domains};
  return reinterpret_cast<nvtxDomainHandle_t>(g_handles->domains);
}

nvtxDomainHandle_t DomainCreateA(const char* name) {
  auto f = Core2<nvtxDomainCreateA_impl_fntype>(NVTX_CBID_CORE2_DomainCreateA);
  return NewDomain(nvtx::Intern(name), f != nullptr ? f(name) : nullptr);
}

nvtxDomainHandle_t DomainCreateW(const wchar_t* name) {
  auto f = Core2<nvtxDomainCreateW_impl_fntype>(NVTX_CBID_CORE2_DomainCreateW);
  return NewDomain(InternWide(name), f != nullptr ? f(name) : nullptr);
}

void DomainDestroy(nvtxDomainHandle_t dom) {
  if (dom == nullptr) return;
  auto f = Core2<nvtxDomainDestroy_impl_fntype>(NVTX_CBID_CORE2_DomainDestroy);
  if (f != nullptr) f(DownDomain(dom));
  auto* d = reinterpret_cast<Domain*>(dom);
  std::lock_guard<std::mutex> lock(g_handles->mu);
  for (Domain** at = &g_handles->domains; *at != nullptr; at = &(*at)->next) {
    if (*at == d) {
      *at = d->next;
      delete d;
      return;
    }
  }
}

void Initialize(const void* reserved) {
  auto f = Core2<nvtxInitialize_impl_fntype>(NVTX_CBID_CORE2_Initialize);
  if (f != nullptr) f(reserved);
}

// ------------------------------------------------------------------------------ installation

template <typename Fn>
void Set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id <= size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool InstallCore(const NvtxExportTableCallbacks* cb) {
  NvtxFunctionTable t = nullptr;
  unsigned int n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) == 0 || t == nullptr) return false;
  Set(t, n, NVTX_CBID_CORE_MarkEx, &MarkEx);
  Set(t, n, NVTX_CBID_CORE_MarkA, &MarkA);
  Set(t, n, NVTX_CBID_CORE_MarkW, &MarkW);
  Set(t, n, NVTX_CBID_CORE_RangeStartEx, &RangeStartEx);
  Set(t, n, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
  Set(t, n, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
  Set(t, n, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
  Set(t, n, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
  Set(t, n, NVTX_CBID_CORE_RangePushA, &RangePushA);
  Set(t, n, NVTX_CBID_CORE_RangePushW, &RangePushW);
  Set(t, n, NVTX_CBID_CORE_RangePop, &RangePop);
  Set(t, n, NVTX_CBID_CORE_NameCategoryA, &NameCategoryA);
  Set(t, n, NVTX_CBID_CORE_NameCategoryW, &NameCategoryW);
  Set(t, n, NVTX_CBID_CORE_NameOsThreadA, &NameOsThreadA);
  Set(t, n, NVTX_CBID_CORE_NameOsThreadW, &NameOsThreadW);
  return true;
}

void InstallCore2(const NvtxExportTableCallbacks* cb) {
  NvtxFunctionTable t = nullptr;
  unsigned int n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) == 0 || t == nullptr) return;
  Set(t, n, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx);
  Set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
  Set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
  Set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx);
  Set(t, n, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop);
  Set(t, n, NVTX_CBID_CORE2_DomainResourceCreate, &DomainResourceCreate);
  Set(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, &DomainResourceDestroy);
  Set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, &DomainNameCategoryA);
  Set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, &DomainNameCategoryW);
  Set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
  Set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
  Set(t, n, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
  Set(t, n, NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW);
  Set(t, n, NVTX_CBID_CORE2_DomainDestroy, &DomainDestroy);
  Set(t, n, NVTX_CBID_CORE2_Initialize, &Initialize);
}

// The proxy export table the forwarded consumer initialises with.
int NVTX_API ProxyModuleTable(NvtxCallbackModule module, NvtxFunctionTable* out,
                              unsigned int* size) {
  if (module == NVTX_CB_MODULE_CORE || module == NVTX_CB_MODULE_CORE2) {
    const bool core = module == NVTX_CB_MODULE_CORE;
    if (out != nullptr) *out = core ? g_down.core_slots : g_down.core2_slots;
    if (size != nullptr) {
      *size = core ? unsigned{NVTX_CBID_CORE_SIZE} : unsigned{NVTX_CBID_CORE2_SIZE};
    }
    return 1;
  }
  auto app = static_cast<const NvtxExportTableCallbacks*>(g_down.app_table(NVTX_ETID_CALLBACKS));
  return app == nullptr ? 0 : app->GetModuleFunctionTable(module, out, size);
}

const void* NVTX_API ProxyExportTable(uint32_t id) {
  if (id == NVTX_ETID_CALLBACKS) return &g_down.callbacks;
  return g_down.app_table(id);  // the version info
}

// XTIMER_NVTX_FORWARD's library and its entry point (cold, once).
void LoadDownstream() {
  const char* path = getenv("XTIMER_NVTX_FORWARD");
  if (path == nullptr || path[0] == '\0') return;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib != nullptr) {
    g_down.init = reinterpret_cast<NvtxInitializeInjectionNvtxFunc_t>(
        RealDlsym(lib, "InitializeInjectionNvtx2"));
  }
  if (g_down.init == &InitializeInjectionNvtx2) g_down.init = nullptr;  // ourselves: nothing to do
  if (g_down.init == nullptr) {
    LogLine("XTIMER_NVTX_FORWARD=%s: not an NVTX injection library; NVTX is not forwarded", path);
  }
  for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_down.core_slots[i] = &g_down.core[i];
  for (unsigned i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) g_down.core2_slots[i] = &g_down.core2[i];
  g_down.callbacks.struct_size = sizeof(g_down.callbacks);
  g_down.callbacks.GetModuleFunctionTable = &ProxyModuleTable;
}

bool RecordingWanted() {
  const char* v = getenv("XTIMER_NVTX");
  if (v != nullptr && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0)) return false;
  int m = g_mode.load(std::memory_order_acquire);
  return m == kOn || (m == kUninit && InitSlow());
}

}  // namespace
}  // namespace hook
}  // namespace xtimer

// NVTX's entry point, once per NVTX copy in the process. Nonzero: this copy's slots are ours.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace xtimer::hook;  // NOLINT(build/namespaces)
  std::lock_guard<std::mutex> lock(g_nvtx_init_mu);
  if (!g_down.tried) {
    g_down.tried = true;
    g_down.app_table = get_export_table;
    LoadDownstream();
    g_down.recording = RecordingWanted();
    if (g_down.recording) nvtx::SetStepRange(getenv("XTIMER_STEP_RANGE"));
  }
  if (!g_down.recording) {  // pass-through: the consumer takes this copy's slots itself
    return g_down.init != nullptr ? g_down.init(get_export_table) : 0;
  }
  auto cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->GetModuleFunctionTable == nullptr) return 0;
  if (g_down.init != nullptr && !g_down.initialised) {
    g_down.initialised = true;
    if (g_down.init(&ProxyExportTable) == 0) {
      std::memset(g_down.core, 0, sizeof(g_down.core));
      std::memset(g_down.core2, 0, sizeof(g_down.core2));
    }
  }
  if (!InstallCore(cb)) return 0;
  InstallCore2(cb);
  return 1;
}

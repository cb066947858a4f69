#include "daemon/control/control_json.h"

#include <functional>
#include <map>
#include <utility>

#include <google/protobuf/util/json_util.h>

#include "daemon/diagnosis/hang_check.h"
#include "util/json.h"

namespace xtimer {
namespace daemon {
namespace {

const char* CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

// One table entry per method: parse JSON into the request type, call, print the response.
using JsonCall = std::function<CallStatus(ControlHandler*, const std::string&, std::string*,
                                          const Caller&)>;

template <typename Req, typename Resp>
JsonCall MakeJsonCall(CallStatus (ControlHandler::*method)(const Req&, Resp*, const Caller&)) {
  return [method](ControlHandler* h, const std::string& body, std::string* json,
                  const Caller& caller) {
    namespace pbu = google::protobuf::util;
    Req req;
    pbu::JsonParseOptions po;
    po.ignore_unknown_fields = false;
    const std::string text = body.find_first_not_of(" \t\r\n") == std::string::npos ? "{}" : body;
    auto st = pbu::JsonStringToMessage(text, &req, po);
    if (!st.ok()) {
      std::string why(st.message());
      for (char& c : why) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      return CallStatus{Code::kInvalidArgument, "bad request body: " + why +
                     " (expected a JSON object with the fields of " + Req::descriptor()->name() +
                     ", see docs/control.md)"};
    }
    Resp resp;
    CallStatus cs = (h->*method)(req, &resp, caller);
    if (!cs.ok()) return cs;
    std::string error;
    if (!MessageToJson(resp, json, &error)) return CallStatus{Code::kInternal, error};
    return cs;
  };
}

// The method table: one line per rpc of proto/hosting.proto.
const std::map<std::string, JsonCall>& Methods() {
  static const auto* m = new std::map<std::string, JsonCall>{
      {"DumpKernelTrace", MakeJsonCall(&ControlHandler::DumpKernelTrace)},
      {"DumpStack", MakeJsonCall(&ControlHandler::DumpStack)},
      {"HangCheck", MakeJsonCall(&ControlHandler::HangCheck)},
      {"Status", MakeJsonCall(&ControlHandler::Status)},
  };
  return *m;
}

}  // namespace

int HttpStatus(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kNotFound: return 404;
    case Code::kPermissionDenied: return 403;
    case Code::kFailedPrecondition: return 409;
    case Code::kResourceExhausted: return 413;
    case Code::kUnimplemented: return 405;
    case Code::kInternal: return 500;
  }
  return 500;
}

std::string ErrorJson(Code code, const std::string& message) {
  return std::string("{\"code\":\"") + CodeName(code) + "\",\"error\":" + JsonQuote(message) +
         "}\n";
}

int HandleJson(ControlHandler* handler, const std::string& method, const std::string& body,
               std::string* json, const Caller& caller) {
  if (body.size() > kMaxRequestBytes) {
    *json = ErrorJson(Code::kResourceExhausted,
                      "request body larger than " + std::to_string(kMaxRequestBytes) + " bytes");
    return HttpStatus(Code::kResourceExhausted);
  }
  auto it = Methods().find(method);
  if (it == Methods().end()) {
    std::string names;
    for (const auto& m : Methods()) names += (names.empty() ? "" : ", ") + m.first;
    *json = ErrorJson(Code::kNotFound,
                      "no method '" + method + "' in HostingService (methods: " + names + ")");
    return HttpStatus(Code::kNotFound);
  }
  std::string out;
  CallStatus cs = it->second(handler, body, &out, caller);
  if (!cs.ok()) {
    *json = ErrorJson(cs.code, cs.message);
    return HttpStatus(cs.code);
  }
  *json = std::move(out);
  return 200;
}

}  // namespace daemon
}  // namespace xtimer

// The control service's HTTP/1.1 JSON front: a request body in proto3 JSON to a method of
// ControlHandler (daemon/control/control_handler.h), its answer or error back as JSON with the
// HTTP status. ControlServer calls it for the plain-HTTP requests on the control port; the tests
// and the fuzzer call it directly. The handler itself knows neither JSON nor HTTP.
//
// Adding a method: its line in the table in control_json.cc (Methods()).
#ifndef XTIMER_DAEMON_CONTROL_JSON_H_
#define XTIMER_DAEMON_CONTROL_JSON_H_

#include <string>

#include "daemon/control/control_handler.h"

namespace xtimer {
namespace daemon {

// `method` is the path after "/HostingService/", `body` the JSON request (at most
// kMaxRequestBytes). Returns the HTTP status and sets *json to the JSON response, or to
// ErrorJson's body.
int HandleJson(ControlHandler* handler, const std::string& method, const std::string& body,
               std::string* json, const Caller& caller = Caller());

// HTTP status for a code: 200, 400, 403, 404, 409, 413, 405, 500.
int HttpStatus(Code code);

// JSON error body: {"code": "INVALID_ARGUMENT", "error": message}.
std::string ErrorJson(Code code, const std::string& message);

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONTROL_JSON_H_

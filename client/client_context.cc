#include "client/client_context.h"

#include "base/status_macros.h"
#include "client/cli_error.h"
#include "client/request_id.h"
#include "client/text_input.h"

namespace perfcast::client {

absl::Status ClientContext::Connect() {
  ASSIGN_OR_RETURN(channel_, OpenChannel(server, connection));
  return absl::OkStatus();
}

std::string Describe(const grpc::Status& status) {
  static constexpr const char* kNames[] = {
      "OK",           "CANCELLED",         "UNKNOWN",        "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND",    "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL",         "UNAVAILABLE",    "DATA_LOSS",
      "UNAUTHENTICATED"};
  const int code = status.error_code();
  const char* name = code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
  // Messages quote names and values from requests and files; a terminal must
  // see them cut and with control bytes escaped.
  return std::string(name) + ": " + Printable(status.error_message(), kMaxShownMessageBytes);
}

std::string Describe(const absl::Status& status) {
  return Describe(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                               std::string(status.message())));
}

}  // namespace perfcast::client

#include "client/client_context.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "base/status_macros.h"
#include "client/cli_error.h"
#include "client/proto_json.h"
#include "client/request_id.h"
#include "client/text_input.h"

namespace perfcast::client {

void ClientContext::ConnectOnFirstUse() {
  open_ = [this] { return OpenChannel(server, connection); };
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> ClientContext::Channel() {
  if (!channel_.has_value()) {
    channel_ = open_ ? open_()
                     : absl::FailedPreconditionError("no server: the command opened no channel");
  }
  return *channel_;
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

StructuredWriter& ClientContext::Out() {
  if (out_ == nullptr) {
    out_ = std::make_unique<StructuredWriter>(output, std::cout, isatty(STDOUT_FILENO) != 0);
  }
  return *out_;
}

nlohmann::json ClientContext::ToJson(const google::protobuf::Message& message) const {
  return ProtoJsonValue(message, /*expand_unset=*/output == OutputFormat::kCsv);
}

size_t ClientContext::TableWidth() const {
  if (wide || isatty(STDOUT_FILENO) == 0) return 0;
  size_t columns = 0;
  if (const char* env = std::getenv("COLUMNS"); env != nullptr && absl::SimpleAtoi(env, &columns)) {
    return columns;
  }
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

CliError CallFailed(const grpc::Status& status) {
  // The memory check's refusal (predictor::CheckMemoryFit) opens with these
  // words, on every road to a price.
  const bool does_not_fit = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                            absl::StartsWith(status.error_message(), "does not fit");
  return CliError{does_not_fit ? kExitPartial : kExitFailure, Describe(status)};
}

CliError Failed(const absl::Status& status) { return CliError{kExitFailure, Describe(status)}; }

std::string Describe(const absl::Status& status) {
  return Describe(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                               std::string(status.message())));
}

}  // namespace perfcast::client

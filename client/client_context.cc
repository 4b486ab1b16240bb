#include "client/client_context.h"

#include "client/cli_error.h"
#include "client/request_id.h"

namespace perfcast::client {

std::shared_ptr<grpc::Channel> ClientContext::Channel() {
  if (channel_ == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> creators;
    creators.push_back(std::make_unique<RequestIdInterceptorFactory>());
    channel_ = grpc::experimental::CreateCustomChannelWithInterceptors(
        server, grpc::InsecureChannelCredentials(), args, std::move(creators));
  }
  return channel_;
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
  std::string message = status.error_message();
  for (char& c : message) {
    if (c == '\n') c = ' ';
  }
  return std::string(name) + ": " + message;
}

std::string Describe(const absl::Status& status) {
  return Describe(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                               std::string(status.message())));
}

}  // namespace perfcast::client

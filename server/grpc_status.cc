#include "server/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace perfcast::server {
namespace {

// Messages often quote the offending input; a 1 MB name quoted whole would
// exceed gRPC's trailer limit and the client would see RESOURCE_EXHAUSTED
// instead of the real code.
constexpr size_t kMaxMessageBytes = 2048;

}  // namespace

std::string BoundedMessage(absl::string_view message) {
  if (message.size() <= kMaxMessageBytes) return std::string(message);
  return absl::StrCat(message.substr(0, kMaxMessageBytes), "... (",
                      message.size() - kMaxMessageBytes, " more bytes)");
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      BoundedMessage(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace perfcast::server

// The one place where absl::Status becomes grpc::Status and back: codes map
// one to one (both follow google.rpc.Code) and the message is kept, cut to
// 2 KB on the way out so that a message quoting huge input still fits gRPC's
// trailer.
#ifndef PERFCAST_SERVER_GRPC_STATUS_H_
#define PERFCAST_SERVER_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace perfcast::server {

grpc::Status ToGrpcStatus(const absl::Status& status);
// A call's status as the libraries' (in-process calls, call deadlines).
absl::Status FromGrpcStatus(const grpc::Status& status);
// An error message cut to 2 KB (with a note of how much was cut), for
// messages that travel inside responses (per-record rejections).
std::string BoundedMessage(absl::string_view message);

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_GRPC_STATUS_H_

// The one place where absl::Status becomes grpc::Status: codes map one to
// one (both follow google.rpc.Code) and the message is kept.
#ifndef PERFCAST_SERVER_GRPC_STATUS_H_
#define PERFCAST_SERVER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace perfcast::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_GRPC_STATUS_H_

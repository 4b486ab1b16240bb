// Request ids on the CLI's calls: every call carries a fresh random
// `x-request-id` (perfcastd logs it on every line about the call), and a
// failed call's status message ends with "(request id <id>)", so that the
// one-line error a user pastes leads an operator to the server's log lines.
#ifndef PERFCAST_CLIENT_REQUEST_ID_H_
#define PERFCAST_CLIENT_REQUEST_ID_H_

#include <mutex>
#include <string>

#include "absl/random/random.h"
#include "grpcpp/support/client_interceptor.h"

namespace perfcast::client {

// For grpc::experimental::CreateCustomChannelWithInterceptors. Thread-safe.
class RequestIdInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

  // 16 lowercase hex digits.
  std::string NewRequestId();

 private:
  std::mutex random_mutex_;  // absl::BitGen is not thread-safe
  absl::BitGen random_;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_REQUEST_ID_H_

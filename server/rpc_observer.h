// What perfcastd notes about every RPC, in one place for all services and
// all three server APIs (sync, callback, streaming): a gRPC server
// interceptor that
//   - gives the call a request id: the client's `x-request-id` metadata when
//     it is valid (1 to 128 visible ASCII characters), else a fresh random
//     64-bit hex id; sends it back as initial metadata `x-request-id`, and
//     leaves it in the call's client metadata so services can log it
//     (RequestIdOf);
//   - writes one access-log line when the call ends: method, code,
//     duration_ms, peer, request_id (and the error message if it failed);
//     at info level, except health checks (debug: probes call them every few
//     seconds) and server faults (INTERNAL, UNKNOWN, DATA_LOSS: error);
//   - counts the call and its latency in Metrics (when given);
//   - answers a request whose bytes do not parse INVALID_ARGUMENT instead of
//     gRPC's INTERNAL (methods that take one request message; a stream's
//     reader reads bytes itself, as ProfileStore.Import does).
#ifndef PERFCAST_SERVER_RPC_OBSERVER_H_
#define PERFCAST_SERVER_RPC_OBSERVER_H_

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/random/random.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/logger.h"
#include "server/metrics.h"

namespace perfcast::server {

inline constexpr char kRequestIdKey[] = "x-request-id";

// Whether a client-sent request id is usable: 1..128 characters, each
// visible ASCII (no spaces or control characters that could forge log lines).
bool IsValidRequestId(absl::string_view id);

// The request id of the call `context` belongs to (see above); empty if the
// server runs without the observer.
std::string RequestIdOf(const grpc::ServerContextBase& context);

// Registered with ServerBuilder::experimental().SetInterceptorCreators; the
// server then owns it. `logger` and `metrics` (which may be null: no
// metrics) must outlive the server. Thread-safe.
class RpcObserverFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  RpcObserverFactory(Logger& logger, Metrics* metrics) : logger_(logger), metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

  // A new random request id, 16 lowercase hex digits.
  std::string NewRequestId();

  Logger& logger() { return logger_; }
  Metrics* metrics() { return metrics_; }

 private:
  Logger& logger_;
  Metrics* const metrics_;
  std::mutex random_mutex_;  // absl::BitGen is not thread-safe
  absl::BitGen random_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_RPC_OBSERVER_H_

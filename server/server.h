// perfcastd's gRPC server: the v1 services over one Store, the standard
// grpc.health.v1 health service and server reflection, a bounded pool of
// request threads, and a graceful shutdown that lets in-flight RPCs finish
// (or cancels them, rolling back their imports) before the store closes.
#ifndef PERFCAST_SERVER_SERVER_H_
#define PERFCAST_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "server/logger.h"
#include "server/metrics.h"

namespace grpc {
class Channel;
class Server;
}

namespace perfcast::server {

struct ServerOptions {
  // Port 0 picks a free one. Empty: no port at all, the services are reached
  // only through InProcessChannel() (the CLI's --local).
  std::string listen_address = "127.0.0.1:50051";
  int max_request_threads = 32;
  int max_message_bytes = 64 << 20;
  int64_t max_profiles_per_import = 10'000'000;
  // Where RPC and import metrics go; null: none. Must outlive the server.
  Metrics* metrics = nullptr;

  // TLS: the server's certificate chain and private key, PEM text (not
  // paths). Both empty: plaintext.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // With TLS: when set, clients must present a certificate signed by this CA
  // (PEM text); the handshake fails otherwise.
  std::string tls_client_ca_pem;
  // Bearer tokens that perfcast.v1 calls must carry (see Authenticator).
  // Empty: no authentication. Health checks never need one.
  std::vector<std::string> tokens;
  // The longest a streaming import/export, fit, evaluation or batch of
  // predictions may run (see CallTimer); infinite: no cap.
  absl::Duration max_call = absl::InfiniteDuration();
  // Predict answers a question asked again within a second from memory;
  // benchmarks turn this off to measure the pricing path itself.
  bool predict_answer_cache = true;
  // The longest an Import stream may go without a message (see IdleWatchdog).
  absl::Duration max_import_idle = absl::Seconds(60);
};

class Server {
 public:
  // Starts serving `store` (which must outlive the server). Unavailable if
  // the address cannot be bound; InvalidArgument for a key without a
  // certificate (or the reverse) or a client CA without TLS.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       db::Store& store,
                                                       const models::GpuCatalog& catalog,
                                                       Logger& logger);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound (useful with port 0); 0 without one.
  int port() const { return port_; }

  // A channel to the services inside this process, without a socket: what
  // the CLI's --local calls them through. Valid while the server lives.
  std::shared_ptr<grpc::Channel> InProcessChannel() const;

  // Stops accepting calls, waits up to `grace` for in-flight calls, then
  // cancels the rest. Idempotent; safe to call from another thread than Wait.
  void Shutdown(absl::Duration grace);

  // Blocks until Shutdown has completed.
  void Wait();

 private:
  struct Services;
  Server() = default;

  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  int max_message_bytes_ = 0;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_SERVER_H_

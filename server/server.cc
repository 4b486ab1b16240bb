#include "server/server.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"
#include "server/authenticator.h"
#include "server/node_registry_service.h"
#include "server/predictor_service.h"
#include "server/profile_store_service.h"
#include "server/rpc_observer.h"

namespace perfcast::server {

namespace {

// Plaintext without a certificate; TLS (and mTLS with a client CA) with one.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and its private key");
  }
  if (options.tls_cert_pem.empty()) {
    if (!options.tls_client_ca_pem.empty()) {
      return absl::InvalidArgumentError(
          "client certificates (a client CA) need TLS: give a certificate and key too");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(
      options.tls_client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = options.tls_client_ca_pem;
  ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
  return grpc::SslServerCredentials(ssl);
}

const char* TlsMode(const ServerOptions& options) {
  if (options.tls_cert_pem.empty()) return "off";
  return options.tls_client_ca_pem.empty() ? "on" : "mutual";
}

}  // namespace

struct Server::Services {
  Services(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
           const ServerOptions& options)
      : auth(options.tokens, logger),
        nodes(store, catalog, logger, auth),
        profiles(store, catalog, logger, auth,
                 ProfileStoreLimits{.max_profiles_per_import = options.max_profiles_per_import,
                                    .max_call = options.max_call,
                                    .max_import_idle = options.max_import_idle},
                  options.metrics),
        predictor(store, catalog, logger, auth,
                  PredictorServiceOptions{.max_call = options.max_call,
                                          .answer_cache = options.predict_answer_cache,
                                          .pricing = {}}) {}
  Authenticator auth;  // before the services that hold it
  NodeRegistryService nodes;
  ProfileStoreService profiles;
  PredictorService predictor;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      db::Store& store,
                                                      const models::GpuCatalog& catalog,
                                                      Logger& logger) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, Credentials(options));
  std::unique_ptr<Server> server(new Server());
  server->services_ = std::make_unique<Services>(store, catalog, logger, options);
  server->max_message_bytes_ = options.max_message_bytes;

  grpc::EnableDefaultHealthCheckService(true);
  // Process-wide, like the health service: Abseil built without NDEBUG (as
  // Debian ships it) checks every absl::Mutex acquisition for lock-order
  // cycles under one process-wide lock, gRPC's own locks included, so that
  // every lock costs several times more and the threads of a busy server
  // queue on that one lock (README.md, "Performance"). A release build of
  // Abseil never checks.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second perfcastd on a busy port
  // would start, and clients would alternate between two databases.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const bool listens = !options.listen_address.empty();
  if (listens) builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  builder.RegisterService(&server->services_->nodes);
  builder.RegisterService(&server->services_->profiles);
  builder.RegisterService(&server->services_->predictor);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  grpc::ResourceQuota quota("perfcastd");
  quota.SetMaxThreads(options.max_request_threads);
  builder.SetResourceQuota(quota);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> observers;
  observers.push_back(std::make_unique<RpcObserverFactory>(logger, options.metrics));
  builder.experimental().SetInterceptorCreators(std::move(observers));
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || (listens && server->port_ == 0)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, " (address in use or invalid",
                     options.tls_cert_pem.empty() ? "" : ", or an unusable TLS certificate or key",
                     ")"));
  }
  logger.Info("serving", {{"address", options.listen_address},
                          {"port", absl::StrCat(server->port_)},
                          {"tls", TlsMode(options)},
                          {"auth", options.tokens.empty() ? "off" : "bearer token"}});
  return server;
}

std::shared_ptr<grpc::Channel> Server::InProcessChannel() const {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(max_message_bytes_);
  arguments.SetMaxSendMessageSize(max_message_bytes_);
  return grpc_server_->InProcessChannel(arguments);
}

Server::~Server() {
  Shutdown(absl::ZeroDuration());
  Wait();
}

void Server::Shutdown(absl::Duration grace) {
  if (grpc_server_ == nullptr) return;
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  grpc_server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
}

void Server::Wait() {
  if (grpc_server_ != nullptr) grpc_server_->Wait();
}

}  // namespace perfcast::server

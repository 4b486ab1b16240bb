#include "server/server.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/grpcpp.h"
#include "server/node_registry_service.h"
#include "server/predictor_service.h"
#include "server/profile_store_service.h"
#include "server/rpc_observer.h"

namespace perfcast::server {

struct Server::Services {
  Services(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
           ProfileStoreLimits limits, Metrics* metrics)
      : nodes(store, catalog, logger), profiles(store, catalog, logger, limits, metrics),
        predictor(store, catalog, logger) {}
  NodeRegistryService nodes;
  ProfileStoreService profiles;
  PredictorService predictor;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      db::Store& store,
                                                      const models::GpuCatalog& catalog,
                                                      Logger& logger) {
  std::unique_ptr<Server> server(new Server());
  server->services_ = std::make_unique<Services>(
      store, catalog, logger,
      ProfileStoreLimits{.max_profiles_per_import = options.max_profiles_per_import},
      options.metrics);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
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
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, " (address in use or invalid)"));
  }
  logger.Info("serving", {{"address", options.listen_address},
                          {"port", absl::StrCat(server->port_)}});
  return server;
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

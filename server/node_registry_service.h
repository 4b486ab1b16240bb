// perfcast.v1.NodeRegistry over a Store: decodes requests, resolves catalog
// GPU names, calls the store, encodes replies.
#ifndef PERFCAST_SERVER_NODE_REGISTRY_SERVICE_H_
#define PERFCAST_SERVER_NODE_REGISTRY_SERVICE_H_

#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "server/authenticator.h"
#include "server/logger.h"

namespace perfcast::server {

class NodeRegistryService final : public v1::NodeRegistry::Service {
 public:
  // `store`, `catalog`, `logger` and `auth` must outlive the service.
  NodeRegistryService(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
                      const Authenticator& auth)
      : store_(store), catalog_(catalog), logger_(logger), auth_(auth) {}

  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterNodeRequest* request,
                        v1::RegisterNodeResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetNodeRequest* request,
                   v1::GetNodeResponse* response) override;
  grpc::Status List(grpc::ServerContext* context, const v1::ListNodesRequest* request,
                    v1::ListNodesResponse* response) override;
  grpc::Status Deregister(grpc::ServerContext* context, const v1::DeregisterNodeRequest* request,
                          v1::DeregisterNodeResponse* response) override;

 private:
  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  const Authenticator& auth_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_NODE_REGISTRY_SERVICE_H_

#include "server/node_registry_service.h"

#include "absl/strings/str_cat.h"
#include "proto/convert.h"
#include "server/grpc_status.h"
#include "server/rpc_observer.h"
#include "server/request_validation.h"

namespace perfcast::server {

grpc::Status NodeRegistryService::Register(grpc::ServerContext* context,
                                           const v1::RegisterNodeRequest* request,
                                           v1::RegisterNodeResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.Register"); !s.ok()) return s;
  absl::StatusOr<models::Node> node = NodeFromRegisterRequest(*request, catalog_);
  if (!node.ok()) return ToGrpcStatus(node.status());
  absl::StatusOr<models::Node> stored = store_.RegisterNode(*node);
  if (!stored.ok()) return ToGrpcStatus(stored.status());
  logger_.Info("node registered", {{"request_id", RequestIdOf(*context)}, {"node", stored->name}, {"gpu", stored->gpu.model},
                                   {"count", absl::StrCat(stored->gpu_count)}});
  proto::ToProto(*stored, response->mutable_node());
  return grpc::Status::OK;
}

grpc::Status NodeRegistryService::Get(grpc::ServerContext* context,
                                      const v1::GetNodeRequest* request,
                                      v1::GetNodeResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.Get"); !s.ok()) return s;
  if (absl::Status s = ValidateNodeName(request->name()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<models::Node> node = store_.GetNode(request->name());
  if (!node.ok()) return ToGrpcStatus(node.status());
  proto::ToProto(*node, response->mutable_node());
  return grpc::Status::OK;
}

grpc::Status NodeRegistryService::List(grpc::ServerContext* context,
                                       const v1::ListNodesRequest* request,
                                       v1::ListNodesResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.List"); !s.ok()) return s;
  absl::StatusOr<db::NodeFilter> filter = NodeFilterFromRequest(*request);
  if (!filter.ok()) return ToGrpcStatus(filter.status());
  absl::StatusOr<db::NodePage> page = store_.ListNodes(*filter);
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (const models::Node& node : page->nodes) proto::ToProto(node, response->add_nodes());
  response->set_next_page_token(page->next_page_token);
  return grpc::Status::OK;
}

grpc::Status NodeRegistryService::Deregister(grpc::ServerContext* context,
                                             const v1::DeregisterNodeRequest* request,
                                             v1::DeregisterNodeResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.Deregister"); !s.ok()) return s;
  if (absl::Status s = ValidateNodeName(request->name()); !s.ok()) return ToGrpcStatus(s);
  absl::Status status = store_.DeregisterNode(request->name(), request->purge_profiles());
  if (status.ok()) logger_.Info("node deregistered",
                                {{"request_id", RequestIdOf(*context)}, {"node", request->name()}});
  return ToGrpcStatus(status);
}

}  // namespace perfcast::server

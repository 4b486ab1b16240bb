#include "server/node_registry_service.h"

#include "absl/strings/str_cat.h"
#include "proto/convert.h"
#include "server/grpc_status.h"
#include "server/rpc_observer.h"

namespace perfcast::server {

grpc::Status NodeRegistryService::Register(grpc::ServerContext* context,
                                           const v1::RegisterNodeRequest* request,
                                           v1::RegisterNodeResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.Register"); !s.ok()) return s;
  models::Node node;
  node.name = request->name();
  if (node.name.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node name is required");
  }
  switch (request->hardware_case()) {
    case v1::RegisterNodeRequest::kCatalogGpu: {
      absl::StatusOr<models::GpuSpec> spec = catalog_.Find(request->catalog_gpu());
      if (!spec.ok()) return ToGrpcStatus(spec.status());
      node.gpu = *std::move(spec);
      node.source = models::NodeSource::kCatalog;
      break;
    }
    case v1::RegisterNodeRequest::kGpu:
      node.gpu = proto::FromProto(request->gpu());
      node.source = models::NodeSource::kSpecFile;
      if (node.gpu.memory_bandwidth_gbs <= 0 || node.gpu.fp32_tflops <= 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "a GPU spec needs positive memory_bandwidth_gbs and fp32_tflops");
      }
      break;
    case v1::RegisterNodeRequest::HARDWARE_NOT_SET:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "a node needs its GPU: a catalog name or a spec");
  }
  if (request->gpu_count() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "GPU count must be non-negative");
  }
  node.gpu_count = request->gpu_count() == 0 ? 1 : request->gpu_count();
  for (const auto& [key, value] : request->labels()) node.labels[key] = value;
  node.host = proto::FromProto(request->host());
  node.measured = proto::FromProto(request->measured());
  // Measured rates mean an agent ran there, whatever the spec came from.
  if (node.measured != models::MeasuredRates{}) node.source = models::NodeSource::kAgent;
  absl::StatusOr<models::Node> stored = store_.RegisterNode(node);
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
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node name is required");
  }
  absl::StatusOr<models::Node> node = store_.GetNode(request->name());
  if (!node.ok()) return ToGrpcStatus(node.status());
  proto::ToProto(*node, response->mutable_node());
  return grpc::Status::OK;
}

grpc::Status NodeRegistryService::List(grpc::ServerContext* context,
                                       const v1::ListNodesRequest* request,
                                       v1::ListNodesResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.List"); !s.ok()) return s;
  db::NodeFilter filter;
  filter.gpu_model = request->gpu_model();
  for (const auto& [key, value] : request->labels()) filter.labels[key] = value;
  filter.page_size = request->page_size() == 0 ? 100 : request->page_size();
  filter.page_token = request->page_token();
  absl::StatusOr<db::NodePage> page = store_.ListNodes(filter);
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (const models::Node& node : page->nodes) proto::ToProto(node, response->add_nodes());
  response->set_next_page_token(page->next_page_token);
  return grpc::Status::OK;
}

grpc::Status NodeRegistryService::Deregister(grpc::ServerContext* context,
                                             const v1::DeregisterNodeRequest* request,
                                             v1::DeregisterNodeResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "NodeRegistry.Deregister"); !s.ok()) return s;
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node name is required");
  }
  absl::Status status = store_.DeregisterNode(request->name(), request->purge_profiles());
  if (status.ok()) logger_.Info("node deregistered",
                                {{"request_id", RequestIdOf(*context)}, {"node", request->name()}});
  return ToGrpcStatus(status);
}

}  // namespace perfcast::server

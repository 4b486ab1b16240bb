// Fuzzes the request validation of every perfcast.v1 RPC: the first byte
// picks the request message type, the rest is parsed as that message's
// wire bytes and goes through the same functions the services call
// (server/request_validation.h), then through what the store and predictor
// check next. Invariants: whatever is accepted is within the documented
// ranges (finite, positive, bounded), and every refusal says why.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/profile.h"
#include "perfcast/v1/node_registry.pb.h"
#include "perfcast/v1/predictor.pb.h"
#include "perfcast/v1/profile_store.pb.h"
#include "proto/convert.h"
#include "server/request_validation.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace models = perfcast::models;
namespace server = perfcast::server;
namespace v1 = perfcast::v1;

const models::GpuCatalog& Catalog() { return models::GpuCatalog::BuiltIn(); }

void CheckRefusal(const absl::Status& status) {
  PERFCAST_FUZZ_CHECK(status.ok() || !status.message().empty(), "a refusal says why");
}

void CheckNode(const models::Node& node) {
  PERFCAST_FUZZ_CHECK(!node.name.empty(), "a node has a name");
  PERFCAST_FUZZ_CHECK(node.gpu_count >= 1 && node.gpu_count <= models::kMaxGpusPerNode,
                      node.name);
  PERFCAST_FUZZ_CHECK(std::isfinite(node.gpu.memory_bandwidth_gbs) &&
                          node.gpu.memory_bandwidth_gbs > 0 && std::isfinite(node.gpu.fp32_tflops) &&
                          node.gpu.fp32_tflops > 0,
                      node.name);
}

void CheckPredict(const v1::PredictRequest& request) {
  absl::StatusOr<models::WorkloadDescriptor> d = server::DescribeWorkload(request);
  CheckRefusal(d.status());
  if (d.ok()) {
    PERFCAST_FUZZ_CHECK(d->spec.batch_size >= 1 && d->spec.batch_size <= models::kMaxBatchSize,
                        d->spec.Key());
    PERFCAST_FUZZ_CHECK(std::isfinite(d->total_flops()) && d->total_flops() >= 0 &&
                            std::isfinite(d->total_bytes()) && d->total_bytes() >= 0,
                        d->spec.Key());
  }
  absl::Status job = server::JobFromRequest(request).status();
  CheckRefusal(job);
  if (job.ok()) {
    const v1::JobSize& size = request.job();
    PERFCAST_FUZZ_CHECK(size.iterations() > 0 || (size.samples() > 0 && size.epochs() > 0),
                        request.ShortDebugString());
  }
  if (request.target_case() == v1::PredictRequest::kCatalogGpu) {
    CheckRefusal(Catalog().Find(request.catalog_gpu()).status());
  }
}

void CheckFitOptions(const v1::FitOptions& options, const v1::ProfileSelection& selection) {
  absl::StatusOr<perfcast::predictor::FitOptions> fit = server::ToFitOptions(options);
  CheckRefusal(fit.status());
  if (fit.ok()) {
    PERFCAST_FUZZ_CHECK(std::isfinite(fit->ridge) && fit->ridge >= 0 &&
                            std::isfinite(fit->min_improvement) && fit->min_improvement >= 0,
                        options.ShortDebugString());
    PERFCAST_FUZZ_CHECK(fit->fit_level1 || fit->fit_level2, options.ShortDebugString());
  }
  CheckRefusal(server::SelectionFromRequest(selection).status());
}

template <typename Message>
bool Parse(const uint8_t* data, size_t size, Message& message) {
  return message.ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Invalid UTF-8 in string fields is an expected refusal; its log line is noise.
  static const bool kSilenced = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)kSilenced;
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  ++data;
  --size;
  switch (selector % 10) {
    case 0: {  // NodeRegistry.Register
      v1::RegisterNodeRequest request;
      if (!Parse(data, size, request)) return 0;
      absl::StatusOr<models::Node> node = server::NodeFromRegisterRequest(request, Catalog());
      CheckRefusal(node.status());
      if (node.ok()) CheckNode(*node);
      break;
    }
    case 1: {  // NodeRegistry.Get
      v1::GetNodeRequest request;
      if (!Parse(data, size, request)) return 0;
      CheckRefusal(server::ValidateNodeName(request.name()));
      break;
    }
    case 2: {  // NodeRegistry.List
      v1::ListNodesRequest request;
      if (!Parse(data, size, request)) return 0;
      absl::StatusOr<perfcast::db::NodeFilter> filter = server::NodeFilterFromRequest(request);
      CheckRefusal(filter.status());
      break;
    }
    case 3: {  // NodeRegistry.Deregister
      v1::DeregisterNodeRequest request;
      if (!Parse(data, size, request)) return 0;
      CheckRefusal(server::ValidateNodeName(request.name()));
      break;
    }
    case 4: {  // ProfileStore.Import (one stream message)
      v1::ImportRequest request;
      if (!Parse(data, size, request)) return 0;
      for (const v1::Node& wire : request.nodes()) {
        CheckRefusal(server::NodeFromImport(wire, Catalog()).status());
      }
      for (const v1::Profile& wire : request.profiles()) {
        absl::StatusOr<models::Profile> profile = perfcast::proto::FromProto(wire);
        CheckRefusal(profile.status());
        if (!profile.ok()) continue;
        // What ImportTransaction::Add checks before it stores a profile.
        absl::StatusOr<models::WorkloadSpec> spec = models::NormalizeSpec(profile->workload);
        CheckRefusal(spec.status());
        if (!spec.ok()) continue;
        profile->workload = *spec;
        absl::Status valid = models::ValidateProfile(*profile);
        CheckRefusal(valid);
        if (!valid.ok()) continue;
        const models::TimingStats& t = profile->iteration;
        PERFCAST_FUZZ_CHECK(std::isfinite(t.mean_ms) && t.mean_ms > 0 && t.count >= 1 &&
                                profile->repeats >= 1 && t.min_ms <= t.max_ms,
                            profile->workload.Key());
      }
      break;
    }
    case 5: {  // ProfileStore.Export
      v1::ExportRequest request;
      if (!Parse(data, size, request)) return 0;
      absl::StatusOr<server::ExportQuery> query = server::ExportQueryFromRequest(request);
      CheckRefusal(query.status());
      if (query.ok()) {
        PERFCAST_FUZZ_CHECK(query->batch_size >= 1 && query->filter.limit >= 0 &&
                                query->filter.since_us >= 0 && query->filter.until_us >= 0,
                            request.ShortDebugString());
      }
      break;
    }
    case 6: {  // Predictor.Predict
      v1::PredictRequest request;
      if (!Parse(data, size, request)) return 0;
      CheckPredict(request);
      break;
    }
    case 7: {  // Predictor.PredictBatch (one stream message)
      v1::PredictBatchRequest request;
      if (!Parse(data, size, request)) return 0;
      for (const v1::PredictRequest& query : request.queries()) CheckPredict(query);
      break;
    }
    case 8: {  // Predictor.Fit
      v1::FitRequest request;
      if (!Parse(data, size, request)) return 0;
      CheckFitOptions(request.options(), request.selection());
      break;
    }
    case 9: {  // Predictor.Evaluate (GetModel and ListModels take no input to check)
      v1::EvaluateRequest request;
      if (!Parse(data, size, request)) return 0;
      CheckFitOptions(request.options(), request.selection());
      break;
    }
  }
  return 0;
}

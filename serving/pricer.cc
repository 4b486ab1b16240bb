#include "serving/pricer.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "predictor/summary.h"

namespace perfcast::serving {
namespace {

absl::Status CheckFinite(const predictor::Prediction& p) {
  bool finite = std::isfinite(p.iteration_ms) && std::isfinite(p.lo_ms) && std::isfinite(p.hi_ms) &&
                p.iteration_ms > 0;
  for (const auto& [op_class, ms] : p.breakdown_ms) finite = finite && std::isfinite(ms);
  if (!finite) return absl::FailedPreconditionError("the model predicts a non-finite time");
  return absl::OkStatus();
}

}  // namespace

Pricer::Pricer(db::Store& store, const models::GpuCatalog& catalog, Options options)
    : catalog_(catalog),
      models_(store, options.model_recheck),
      nodes_(store, options.node_recheck) {}

absl::StatusOr<std::shared_ptr<const LoadedModel>> Pricer::Model(absl::string_view name) {
  return models_.Latest(ModelName(name));
}

absl::StatusOr<std::shared_ptr<const models::Node>> Pricer::ResolveTarget(const Target& target) {
  switch (target.kind) {
    case Target::Kind::kNode:
      if (target.name.empty()) return absl::InvalidArgumentError("node_name is empty");
      return nodes_.Get(target.name);
    case Target::Kind::kCatalogGpu: {
      {
        absl::MutexLock lock(&mu_);
        auto it = catalog_nodes_.find(target.name);
        if (it != catalog_nodes_.end()) return it->second;
      }
      absl::StatusOr<models::GpuSpec> spec = catalog_.Find(target.name);
      if (!spec.ok()) return spec.status();
      auto node = std::make_shared<models::Node>();
      node->name = absl::StrCat("catalog:", spec->model);
      node->gpu = *std::move(spec);
      node->source = models::NodeSource::kCatalog;
      absl::MutexLock lock(&mu_);
      // Names differ in case or spelling per request; a bounded number of
      // them are worth keeping.
      if (catalog_nodes_.size() > 4 * catalog_.gpus().size() + 64) catalog_nodes_.clear();
      catalog_nodes_[target.name] = node;
      return node;
    }
  }
  return absl::InvalidArgumentError("a target is required: node_name or catalog_gpu");
}

absl::StatusOr<WorkloadPrice> Pricer::Price(std::shared_ptr<const LoadedModel> model,
                                            const models::WorkloadDescriptor& workload,
                                            const Target& target) {
  absl::StatusOr<std::shared_ptr<const models::Node>> node = ResolveTarget(target);
  if (!node.ok()) return node.status();
  absl::StatusOr<predictor::Prediction> prediction =
      predictor::PredictDescribed(model->model, workload, **node);
  if (!prediction.ok()) return prediction.status();
  if (absl::Status finite = CheckFinite(*prediction); !finite.ok()) return finite;
  WorkloadPrice price;
  price.cv_mape = predictor::PredictionCvMape(model->model, workload.spec.phase,
                                              prediction->method, model->meta.cv_mape);
  price.model = std::move(model);
  price.node = *std::move(node);
  price.prediction = *std::move(prediction);
  price.batch_size = workload.spec.batch_size;
  price.phase = workload.spec.phase;
  return price;
}

absl::StatusOr<predictor::JobEstimate> PriceJob(const WorkloadPrice& price,
                                                const predictor::JobSize& job) {
  return predictor::EstimateJob(price.prediction, job, price.batch_size);
}

}  // namespace perfcast::serving

#include "serving/pricer.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "predictor/summary.h"

namespace perfcast::serving {
namespace {

// Plans kept: a plan per model and node in use (a few kB each).
constexpr size_t kMaxPlans = 1'000;

// `breakdown`: (class, ms) pairs, the class a string or a pointer to one.
template <typename Breakdown>
absl::Status CheckFinite(const predictor::Prediction& p, const Breakdown& breakdown) {
  bool finite = std::isfinite(p.iteration_ms) && std::isfinite(p.lo_ms) && std::isfinite(p.hi_ms) &&
                p.iteration_ms > 0;
  for (const auto& [op_class, ms] : breakdown) finite = finite && std::isfinite(ms);
  if (!finite) return absl::FailedPreconditionError("the model predicts a non-finite time");
  return absl::OkStatus();
}

}  // namespace

WorkloadPrice PlannedPrice::ToWorkloadPrice() const {
  WorkloadPrice price;
  price.model = model;
  price.node = node;
  price.workload = workload;
  price.prediction = prediction.ToPrediction();
  price.memory = memory;
  price.memory_verdict = memory_verdict;
  price.batch_size = batch_size;
  price.cv_mape = cv_mape;
  return price;
}

Pricer::Pricer(db::Store& store, const models::GpuCatalog& catalog, Options options)
    : store_(store),
      catalog_(catalog),
      models_(store, options.model_recheck),
      nodes_(store, options.node_recheck),
      plans_(kMaxPlans, absl::InfiniteDuration()) {}

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
      std::shared_ptr<const models::Node> canonical =
          catalog_nodes_.try_emplace(node->gpu.model, std::move(node)).first->second;
      catalog_nodes_[target.name] = canonical;
      return canonical;
    }
  }
  return absl::InvalidArgumentError("a target is required: node_name or catalog_gpu");
}

std::optional<predictor::Link> Pricer::MeasuredLink(const std::string& node_name) {
  db::ProfileFilter filter;
  filter.node_name = node_name;
  filter.family = "allreduce";
  std::vector<predictor::AllReduceSample> samples;
  absl::Status scanned = store_.ScanProfiles(filter, [&](const models::Profile& p) {
    auto bytes = p.workload.params.find("bytes");
    auto gpus = p.workload.params.find("gpus");
    if (bytes != p.workload.params.end() && gpus != p.workload.params.end()) {
      samples.push_back({static_cast<double>(bytes->second), static_cast<int>(gpus->second),
                         p.iteration.mean_ms / 1e3});
    }
    return true;
  });
  if (!scanned.ok()) return std::nullopt;
  absl::StatusOr<predictor::Link> link = predictor::FitAllReduceLink(samples);
  if (!link.ok()) return std::nullopt;
  return *link;
}

std::shared_ptr<const Pricer::Planned> Pricer::PlanFor(
    const std::shared_ptr<const LoadedModel>& model,
    const std::shared_ptr<const models::Node>& node) {
  thread_local std::string key;
  key.clear();
  absl::StrAppend(&key, model->meta.id, "/", node->name);
  std::shared_ptr<const Planned> planned = plans_.Find(key, model->meta.id);
  if (planned != nullptr && planned->model == model && planned->node == node) return planned;
  planned = std::make_shared<const Planned>(model, node);
  plans_.Put(key, model->meta.id, planned);
  return planned;
}

absl::StatusOr<PlannedPrice> Pricer::PricePlanned(
    std::shared_ptr<const LoadedModel> model,
    std::shared_ptr<const models::WorkloadDescriptor> described, const Target& target) {
  absl::StatusOr<std::shared_ptr<const models::Node>> node = ResolveTarget(target);
  if (!node.ok()) return node.status();
  return PricePlanned(std::move(model), std::move(described), *std::move(node));
}

absl::StatusOr<PlannedPrice> Pricer::PricePlanned(
    std::shared_ptr<const LoadedModel> model,
    std::shared_ptr<const models::WorkloadDescriptor> described,
    std::shared_ptr<const models::Node> node) {
  const predictor::PreparedWorkload prepared(*described);
  return PricePlanned(std::move(model), std::move(described), std::move(node), prepared);
}

absl::StatusOr<PlannedPrice> Pricer::PricePlanned(
    std::shared_ptr<const LoadedModel> model,
    std::shared_ptr<const models::WorkloadDescriptor> described,
    std::shared_ptr<const models::Node> node, const predictor::PreparedWorkload& prepared) {
  PlannedPrice price;
  if (absl::Status s = PricePlanned(std::move(model), std::move(described), std::move(node),
                                    prepared, &price);
      !s.ok()) {
    return s;
  }
  return price;
}

absl::Status Pricer::PricePlanned(std::shared_ptr<const LoadedModel> model,
                                  std::shared_ptr<const models::WorkloadDescriptor> described,
                                  std::shared_ptr<const models::Node> node,
                                  const predictor::PreparedWorkload& prepared,
                                  PlannedPrice* out) {
  const models::WorkloadDescriptor& workload = *described;
  PlannedPrice& price = *out;
  price.memory = predictor::EstimateMemory(model->model.memory, prepared.memory_inputs());
  price.memory_verdict = predictor::CheckMemoryFit(price.memory, node->gpu);
  if (!price.memory_verdict.fits) return absl::FailedPreconditionError(price.memory_verdict.reason);
  std::shared_ptr<const Planned> planned = PlanFor(model, node);
  if (absl::Status s = planned->plan.PredictPlanned(prepared, &price.prediction); !s.ok()) {
    return s;
  }
  if (absl::Status finite = CheckFinite(price.prediction.numbers, price.prediction.breakdown);
      !finite.ok()) {
    return finite;
  }
  price.cv_mape = predictor::PredictionCvMape(model->model, workload.spec.phase,
                                              price.prediction.numbers.method, model->meta.cv_mape);
  price.model = std::move(model);
  price.node = std::move(node);
  price.plan = std::move(planned);
  price.batch_size = workload.spec.batch_size;
  price.workload = std::move(described);
  return absl::OkStatus();
}

absl::StatusOr<WorkloadPrice> Pricer::Price(
    std::shared_ptr<const LoadedModel> model,
    std::shared_ptr<const models::WorkloadDescriptor> described, const Target& target,
    const std::optional<predictor::ParallelLayout>& layout) {
  if (!layout.has_value()) {
    absl::StatusOr<PlannedPrice> planned =
        PricePlanned(std::move(model), std::move(described), target);
    if (!planned.ok()) return planned.status();
    return planned->ToWorkloadPrice();
  }
  const models::WorkloadDescriptor& workload = *described;
  absl::StatusOr<std::shared_ptr<const models::Node>> node = ResolveTarget(target);
  if (!node.ok()) return node.status();
  WorkloadPrice price;
  predictor::ParallelOptions options;
  models::Node linked = **node;
  // Nodes stored before the link fields existed take them from the catalog.
  models::CompleteFromCatalog(catalog_, linked.gpu);
  if (target.kind == Target::Kind::kNode) {
    options.max_gpus = std::max(1, linked.gpu_count);
    options.gpus_per_node = options.max_gpus;
    options.measured_link = MeasuredLink(linked.name);
  }
  absl::StatusOr<predictor::ParallelPrediction> parallel =
      predictor::PredictParallel(model->model, workload.spec, linked, *layout, options);
  if (!parallel.ok()) return parallel.status();
  price.prediction = predictor::AsPrediction(*parallel);
  price.parallel = *std::move(parallel);
  if (absl::Status finite = CheckFinite(price.prediction, price.prediction.breakdown_ms);
      !finite.ok()) {
    return finite;
  }
  price.cv_mape = predictor::PredictionCvMape(model->model, workload.spec.phase,
                                              price.prediction.method, model->meta.cv_mape);
  price.model = std::move(model);
  price.node = *std::move(node);
  price.batch_size = workload.spec.batch_size;
  price.workload = std::move(described);
  return price;
}

absl::StatusOr<predictor::JobEstimate> PriceJob(const WorkloadPrice& price,
                                                const predictor::JobSize& job) {
  return predictor::EstimateJob(price.prediction, job, price.batch_size);
}

absl::StatusOr<predictor::JobEstimate> PriceJob(const PlannedPrice& price,
                                                const predictor::JobSize& job) {
  return predictor::EstimateJob(price.prediction.numbers, job, price.batch_size);
}

}  // namespace perfcast::serving

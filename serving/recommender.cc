#include "serving/recommender.h"

#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace perfcast::serving {
namespace {

absl::StatusOr<int64_t> Iterations(const predictor::JobSize& job, int64_t batch_size) {
  if (absl::Status s = predictor::ValidateJobSize(job); !s.ok()) return s;
  if (job.iterations != 0) return job.iterations;
  if (batch_size < 1) return absl::InvalidArgumentError("batch_size must be >= 1");
  const int64_t per_epoch = job.samples / batch_size + (job.samples % batch_size != 0);
  if (per_epoch > predictor::kMaxIterations / job.epochs) {
    return absl::OutOfRangeError(absl::StrCat("the job has more than ",
                                              predictor::kMaxIterations, " iterations"));
  }
  return per_epoch * job.epochs;
}

}  // namespace

absl::StatusOr<RecommendAnswer> Recommend(Pricer& pricer, db::Store& store,
                                          const models::GpuCatalog& catalog,
                                          const RecommendQuery& query) {
  if (query.catalog_only && query.nodes_only) {
    return absl::InvalidArgumentError("catalog_only and nodes_only leave nothing to rank");
  }
  absl::StatusOr<int64_t> iterations = Iterations(query.job, query.workload.spec.batch_size);
  if (!iterations.ok()) return iterations.status();
  RecommendAnswer answer;
  answer.iterations = *iterations;
  absl::StatusOr<std::shared_ptr<const LoadedModel>> model = pricer.Model(query.model_name);
  if (!model.ok()) return model.status();
  answer.model = *model;

  // Candidates: each with the target the pricer resolves it by.
  std::vector<predictor::Target> targets;
  std::vector<Target> pricer_targets;
  if (!query.nodes_only) {
    std::vector<std::string> names = query.catalog_gpus;
    if (names.empty()) {
      for (const models::GpuSpec& gpu : catalog.gpus()) names.push_back(gpu.model);
    }
    std::set<std::string> seen;
    for (const std::string& name : names) {
      absl::StatusOr<std::shared_ptr<const models::Node>> node =
          pricer.ResolveTarget(Target::CatalogGpu(name));
      if (!node.ok()) return node.status();
      if (!seen.insert((*node)->gpu.model).second) continue;
      targets.push_back({**node, false});
      pricer_targets.push_back(Target::CatalogGpu((*node)->gpu.model));
    }
  }
  if (!query.catalog_only) {
    std::vector<std::string> names = query.node_names;
    if (names.empty()) {
      if (absl::Status s = db::ForEachNode(
              store, {}, [&](models::Node& node) { names.push_back(node.name); });
          !s.ok()) {
        return s;
      }
    }
    std::set<std::string> seen;
    for (const std::string& name : names) {
      if (!seen.insert(name).second) continue;
      absl::StatusOr<std::shared_ptr<const models::Node>> node =
          pricer.ResolveTarget(Target::Node(name));
      if (!node.ok()) return node.status();
      // CPU nodes (no accelerator) are not candidates for a GPU job.
      if ((*node)->gpu_count == 0) continue;
      targets.push_back({**node, true});
      pricer_targets.push_back(Target::Node(name));
    }
  }

  // The pricer is keyed by target; predictor::Recommend hands back the node.
  // Counts above 1 are data-parallel replicas (predictor::PredictParallel):
  // the same job, its global batch split over the GPUs.
  // One copy for every target's price.
  const auto workload = std::make_shared<const models::WorkloadDescriptor>(query.workload);
  auto step = [&](const models::Node& node, int count) -> absl::StatusOr<predictor::Prediction> {
    std::optional<predictor::ParallelLayout> layout;
    if (count > 1) layout = predictor::ParallelLayout{.data = count};
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].node.name != node.name) continue;
      absl::StatusOr<WorkloadPrice> price =
          pricer.Price(answer.model, workload, pricer_targets[i], layout);
      if (!price.ok()) return price.status();
      return price->prediction;
    }
    return absl::InternalError(absl::StrCat("no target named ", node.name));
  };
  predictor::RecommendOptions options;
  options.iterations = answer.iterations;
  options.deadline_seconds = query.deadline_seconds;
  options.budget_usd = query.budget_usd;
  options.gpu_counts = query.gpu_counts.empty() ? std::vector<int>{1} : query.gpu_counts;
  options.rank_by = query.rank_by;
  const models::PriceTable prices = models::PriceTable::BuiltIn().Merged(query.prices);
  absl::StatusOr<std::vector<predictor::Recommendation>> ranked =
      predictor::Recommend(query.workload, targets, step, answer.model->model.memory,
                           answer.model->model.power, prices, options);
  if (!ranked.ok()) return ranked.status();
  answer.ranked = *std::move(ranked);
  if (answer.model->model.memory.empty()) {
    answer.notes.push_back(
        "the model has no memory calibration (fitted before it existed, or no measured peaks): "
        "memory is the analytic estimate; refit to calibrate it");
  }
  if (answer.model->model.power.empty()) {
    answer.notes.push_back(
        "no profile measured board power: energy is spec TDP x a default utilisation");
  }
  return answer;
}

}  // namespace perfcast::serving

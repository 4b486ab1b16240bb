#include "serving/recommender.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "predictor/layout_search.h"

namespace perfcast::serving {
namespace {

absl::StatusOr<int64_t> Iterations(const predictor::JobSize& job, int64_t batch_size) {
  RETURN_IF_ERROR(predictor::ValidateJobSize(job));
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
  RecommendAnswer answer;
  ASSIGN_OR_RETURN(answer.iterations, Iterations(query.job, query.workload.spec.batch_size));
  ASSIGN_OR_RETURN(answer.model, pricer.Model(query.model_name));

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
      ASSIGN_OR_RETURN(std::shared_ptr<const models::Node> node,
                       pricer.ResolveTarget(Target::CatalogGpu(name)));
      if (!seen.insert(node->gpu.model).second) continue;
      targets.push_back({*node, false});
      pricer_targets.push_back(Target::CatalogGpu(node->gpu.model));
    }
  }
  if (!query.catalog_only) {
    std::vector<std::string> names = query.node_names;
    if (names.empty()) {
      RETURN_IF_ERROR(
          db::ForEachNode(store, {}, [&](models::Node& node) { names.push_back(node.name); }));
    }
    std::set<std::string> seen;
    for (const std::string& name : names) {
      if (!seen.insert(name).second) continue;
      ASSIGN_OR_RETURN(std::shared_ptr<const models::Node> node,
                       pricer.ResolveTarget(Target::Node(name)));
      // CPU nodes (no accelerator) are not candidates for a GPU job.
      if (node->gpu_count == 0) continue;
      targets.push_back({*node, true});
      pricer_targets.push_back(Target::Node(name));
    }
  }

  // The pricer is keyed by target; predictor::Recommend hands back the node.
  // Each target's layouts over every count are enumerated and priced
  // together on first use, so that the counts share micro-batches. Every
  // target's question shares one description of the workload.
  Query asked;
  asked.model_name = query.model_name;
  asked.workload = WorkloadOf(query.workload);
  asked.loop = query.loop;
  asked.job = predictor::JobSize{.iterations = answer.iterations};
  const std::vector<int> counts =
      query.gpu_counts.empty() ? std::vector<int>{1} : query.gpu_counts;
  using Searched = absl::StatusOr<std::vector<predictor::PricedLayout>>;
  std::vector<std::map<int, Searched>> searched(targets.size());
  auto search_target = [&](size_t i) -> absl::Status {
    const models::Node& node = targets[i].node;
    const int max_gpus = targets[i].registered ? std::max(1, node.gpu_count) : 0;
    std::vector<predictor::ParallelLayout> layouts;
    std::vector<int> first;  // index of each count's first layout
    for (int count : counts) {
      first.push_back(static_cast<int>(layouts.size()));
      if (max_gpus > 0 && count > max_gpus) continue;
      std::vector<predictor::ParallelLayout> of_count =
          predictor::EnumerateLayouts(query.workload.spec, query.framework, count, max_gpus);
      layouts.insert(layouts.end(), of_count.begin(), of_count.end());
    }
    first.push_back(static_cast<int>(layouts.size()));
    asked.target = pricer_targets[i];
    ASSIGN_OR_RETURN(std::vector<LayoutPrice> priced, pricer.PriceLayouts(asked, layouts));
    for (size_t c = 0; c < counts.size(); ++c) {
      std::vector<predictor::PricedLayout> of_count;
      for (int k = first[c]; k < first[c + 1]; ++k) {
        predictor::PricedLayout& out = of_count.emplace_back();
        out.layout = priced[k].layout;
        out.memory = std::move(priced[k].memory);
        if (priced[k].price.ok()) {
          const std::shared_ptr<const Price>& price = *priced[k].price;
          out.step = std::shared_ptr<const predictor::Prediction>(price, &price->prediction);
        } else {
          out.step = priced[k].price.status();
        }
      }
      if (of_count.empty()) {
        // Why the plainest layout of the count cannot run the job.
        const absl::Status plain = predictor::ValidateLayout(
            query.workload.spec,
            predictor::ParallelLayout{.data = counts[c], .framework = query.framework},
            max_gpus);
        searched[i][counts[c]] =
            plain.ok() ? absl::InvalidArgumentError(absl::StrCat(
                             "no layout of ", counts[c], " GPUs runs the job"))
                       : plain;
        continue;
      }
      searched[i][counts[c]] = std::move(of_count);
    }
    return absl::OkStatus();
  };
  auto search = [&](const models::Node& node, int count) -> Searched {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].node.name != node.name) continue;
      if (searched[i].empty()) RETURN_IF_ERROR(search_target(i));
      auto it = searched[i].find(count);
      if (it == searched[i].end()) {
        return absl::InternalError(absl::StrCat("count ", count, " was not searched"));
      }
      return std::move(it->second);
    }
    return absl::InternalError(absl::StrCat("no target named ", node.name));
  };
  predictor::RecommendOptions options;
  options.iterations = answer.iterations;
  options.deadline_seconds = query.deadline_seconds;
  options.budget_usd = query.budget_usd;
  options.gpu_counts = query.gpu_counts.empty() ? std::vector<int>{1} : query.gpu_counts;
  options.rank_by = query.rank_by;
  options.all_layouts = query.all_layouts;
  const models::PriceTable prices = models::PriceTable::BuiltIn().Merged(query.prices);
  ASSIGN_OR_RETURN(answer.ranked,
                   predictor::Recommend(query.workload, targets, search,
                                        answer.model->model.power, prices, options));
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

// What the Recommend RPC does, without gRPC: gathers the candidates (catalog
// GPUs and registered nodes, narrowed as asked), lays the job out on each
// count in every valid layout (predictor::EnumerateLayouts: data, tensor and
// pipeline parallelism, ZeRO, checkpointing, micro-batches) for the asked
// framework, prices those that fit through the Pricer (Pricer::PriceLayouts),
// and ranks them with predictor::Recommend against the
// deadline and budget, with the model's memory and power calibrations and
// the price table (the shipped one with the request's overrides).
//
// Thread-safe when the Pricer and store are.
#ifndef PERFCAST_SERVING_RECOMMENDER_H_
#define PERFCAST_SERVING_RECOMMENDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/gpu_prices.h"
#include "predictor/job.h"
#include "predictor/recommend.h"
#include "serving/pricer.h"

namespace perfcast::serving {

struct RecommendQuery {
  models::WorkloadDescriptor workload;
  predictor::JobSize job;
  std::vector<std::string> catalog_gpus;  // empty: the whole catalog
  std::vector<std::string> node_names;    // empty: every registered node
  bool catalog_only = false;
  bool nodes_only = false;
  std::vector<models::GpuPrice> prices;   // overrides of the shipped table
  double deadline_seconds = 0;
  double budget_usd = 0;
  std::vector<int> gpu_counts = {1};
  predictor::Framework framework = predictor::Framework::kPytorch;
  bool all_layouts = false;  // every fitting layout a candidate, not each count's best
  predictor::RankBy rank_by = predictor::RankBy::kCost;
  std::string model_name;
  models::Loop loop = models::Loop::kPython;  // see Query::loop
};

struct RecommendAnswer {
  std::shared_ptr<const LoadedModel> model;
  int64_t iterations = 0;
  std::vector<predictor::Recommendation> ranked;
  std::vector<std::string> notes;
};

// Errors: NotFound for a missing model or a named catalog GPU or node that
// does not exist; InvalidArgument for a bad job size, counts, deadline or
// budget, or nothing left to rank (catalog_only and nodes_only together);
// OutOfRange when the job has more than predictor::kMaxIterations
// iterations. A candidate that cannot be priced is ranked as such, not an
// error.
absl::StatusOr<RecommendAnswer> Recommend(Pricer& pricer, db::Store& store,
                                          const models::GpuCatalog& catalog,
                                          const RecommendQuery& query);

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_RECOMMENDER_H_

// The one pricing path: what Predict, PredictBatch and anything that ranks
// or compares jobs (recommend, layouts) use to turn (model, target GPU,
// workload, job size) into a time.
//
// Pricing has two halves. Price() is the job-independent part, the costly
// one: it resolves the target (a registered node or a catalog GPU), runs
// the two-level predictor on the described workload and checks the answer
// is finite. What a one-GPU prediction needs of the model and the node
// alone (the node's rates, the models' feature slots, labels and interval
// factors: predictor::PricingPlan) is worked out once per model and node
// and kept, so that pricing a workload is arithmetic on its operations.
// PriceJob() is the cheap arithmetic that turns a WorkloadPrice into a job
// time for one job size; callers that price the same workload for many job
// sizes keep the WorkloadPrice and call PriceJob per size.
//
// Example:
//   Pricer pricer(store, catalog);
//   absl::StatusOr<std::shared_ptr<const LoadedModel>> model = pricer.Model("default");
//   absl::StatusOr<WorkloadPrice> price =
//       pricer.Price(**model, descriptor, Target::CatalogGpu("H100-SXM5-80GB"));
//   absl::StatusOr<predictor::JobEstimate> job =
//       PriceJob(*price, {.samples = 1'000'000, .epochs = 30});
//
// Thread-safe.
#ifndef PERFCAST_SERVING_PRICER_H_
#define PERFCAST_SERVING_PRICER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/hardware.h"
#include "predictor/collectives.h"
#include "predictor/job.h"
#include "predictor/memory.h"
#include "predictor/parallel.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "serving/answer_cache.h"
#include "serving/model_cache.h"
#include "serving/node_cache.h"

namespace perfcast::serving {

// The GPU a prediction is for.
struct Target {
  enum class Kind { kNode, kCatalogGpu };
  Kind kind = Kind::kNode;
  std::string name;  // a registered node's name, or a catalog GPU name

  static Target Node(std::string name) { return {Kind::kNode, std::move(name)}; }
  static Target CatalogGpu(std::string name) { return {Kind::kCatalogGpu, std::move(name)}; }
};

// The job-independent answer for one workload on one target.
struct WorkloadPrice {
  std::shared_ptr<const LoadedModel> model;
  std::shared_ptr<const models::Node> node;  // the target as priced
  // What was priced (its spec normalised, resolved): shared with the
  // caller's descriptor, not copied (a spec holds a parameter map and a
  // Hugging Face config's text).
  std::shared_ptr<const models::WorkloadDescriptor> workload;
  // One iteration: a single GPU's, or with a layout the whole step's
  // (see predictor::AsPrediction).
  predictor::Prediction prediction;
  // With a multi-GPU layout: the step's parts, memory and links.
  std::optional<predictor::ParallelPrediction> parallel;
  // On one GPU: the step's peak device memory and that it fits (a layout
  // reports its memory per GPU in `parallel`).
  predictor::MemoryEstimate memory;
  predictor::MemoryVerdict memory_verdict;
  int64_t batch_size = 0;       // samples per iteration (global), for PriceJob
  double cv_mape = 0;           // of the level that answered
};

// A one-GPU WorkloadPrice whose prediction's strings live in the pricing
// plan it holds (predictor::PlannedPrediction): what Price answers without a
// label copied, for a caller that encodes the answer itself (perfcastd's
// Predict writes its reply's bytes from it).
struct PlannedPrice {
  std::shared_ptr<const LoadedModel> model;
  std::shared_ptr<const models::Node> node;
  std::shared_ptr<const models::WorkloadDescriptor> workload;
  std::shared_ptr<const void> plan;  // keeps the strings of `prediction` alive
  predictor::PlannedPrediction prediction;
  predictor::MemoryEstimate memory;
  predictor::MemoryVerdict memory_verdict;
  int64_t batch_size = 0;
  double cv_mape = 0;

  // The WorkloadPrice that Price answers for the same question.
  WorkloadPrice ToWorkloadPrice() const;
};

class Pricer {
 public:
  struct Options {
    // How stale a cached model or node may get when another process writes
    // the store; this process's own fits are visible at once.
    absl::Duration model_recheck = absl::Seconds(1);
    absl::Duration node_recheck = absl::Seconds(1);
  };

  // `store` and `catalog` must outlive the pricer.
  Pricer(db::Store& store, const models::GpuCatalog& catalog, Options options);
  Pricer(const Pricer&) = delete;
  Pricer& operator=(const Pricer&) = delete;

  // The latest model of `name` (empty: the default model); see ModelCache.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Model(absl::string_view name);
  // Makes a model this process just saved the latest of its name at once.
  void ModelSaved(std::shared_ptr<const LoadedModel> loaded) { models_.Put(std::move(loaded)); }

  // The node `target` names. NotFound for an unknown node or catalog GPU
  // (see GpuCatalog::Find for short names); InvalidArgument for an empty name.
  absl::StatusOr<std::shared_ptr<const models::Node>> ResolveTarget(const Target& target);

  // Prices `workload` on `target` with `model`, on one GPU or, given a
  // `layout`, on as many as it lays the step over (a registered node limits
  // the layout to its GPU count and lends its measured all-reduce link).
  // Errors: those of ResolveTarget; FailedPrecondition, saying how much it
  // needs and the GPU holds, when the step on one GPU does not fit in the
  // GPU's memory (predictor::CheckMemoryFit with the model's memory
  // calibration): such a GPU gets no time; InvalidArgument when the node
  // lacks usable rates or the layout does not fit (predictor::ValidateLayout);
  // FailedPrecondition when the model cannot price this workload or answers
  // a non-positive or non-finite time.
  absl::StatusOr<WorkloadPrice> Price(
      std::shared_ptr<const LoadedModel> model,
      std::shared_ptr<const models::WorkloadDescriptor> workload, const Target& target,
      const std::optional<predictor::ParallelLayout>& layout = std::nullopt);
  // Price without a layout, its answer as a PlannedPrice (the same errors).
  absl::StatusOr<PlannedPrice> PricePlanned(
      std::shared_ptr<const LoadedModel> model,
      std::shared_ptr<const models::WorkloadDescriptor> workload, const Target& target);
  // As above on the node ResolveTarget answered, for a caller that resolved
  // it already (a node cache lookup fewer).
  absl::StatusOr<PlannedPrice> PricePlanned(
      std::shared_ptr<const LoadedModel> model,
      std::shared_ptr<const models::WorkloadDescriptor> workload,
      std::shared_ptr<const models::Node> node);
  // As above with `workload` prepared once (`prepared` is of *workload and
  // lives as long as it): the server's Predict, which prices each distinct
  // workload many times.
  absl::StatusOr<PlannedPrice> PricePlanned(
      std::shared_ptr<const LoadedModel> model,
      std::shared_ptr<const models::WorkloadDescriptor> workload,
      std::shared_ptr<const models::Node> node, const predictor::PreparedWorkload& prepared);
  // As above, written into `out` (all of it replaced; unspecified on an
  // error): an answer priced in place instead of moved out of a StatusOr.
  absl::Status PricePlanned(std::shared_ptr<const LoadedModel> model,
                            std::shared_ptr<const models::WorkloadDescriptor> workload,
                            std::shared_ptr<const models::Node> node,
                            const predictor::PreparedWorkload& prepared, PlannedPrice* out);
  // As above, for a copy of `workload`.
  absl::StatusOr<WorkloadPrice> Price(
      std::shared_ptr<const LoadedModel> model, const models::WorkloadDescriptor& workload,
      const Target& target,
      const std::optional<predictor::ParallelLayout>& layout = std::nullopt) {
    return Price(std::move(model), std::make_shared<const models::WorkloadDescriptor>(workload),
                 target, layout);
  }

 private:
  // A model's plan for one node, kept while both are current.
  struct Planned {
    Planned(std::shared_ptr<const LoadedModel> m, std::shared_ptr<const models::Node> n)
        : model(std::move(m)), node(std::move(n)), plan(model->model, *node) {}
    std::shared_ptr<const LoadedModel> model;
    std::shared_ptr<const models::Node> node;
    predictor::PricingPlan plan;  // refers to model->model
  };

  // The node's bus bandwidth and latency from its all-reduce benchmark
  // profiles (perfcast-agent collectives), when it has at least two sizes.
  std::optional<predictor::Link> MeasuredLink(const std::string& node_name);
  // `model`'s plan for `node`: kept per model and node name, built again
  // when either is a new object (a refit, a node changed in the store).
  std::shared_ptr<const Planned> PlanFor(const std::shared_ptr<const LoadedModel>& model,
                                         const std::shared_ptr<const models::Node>& node);

  db::Store& store_;
  const models::GpuCatalog& catalog_;
  ModelCache models_;
  NodeCache nodes_;
  AnswerCache<Planned> plans_;
  // Catalog GPUs as nodes, built on first use; the catalog never changes.
  // Keyed by the names asked for and by the catalog's own name, so that
  // every spelling of a GPU shares one node (and its plans).
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const models::Node>> catalog_nodes_
      ABSL_GUARDED_BY(mu_);
};

// The job time of `job` under `price`. Errors: those of
// predictor::EstimateJob (InvalidArgument, OutOfRange, FailedPrecondition).
absl::StatusOr<predictor::JobEstimate> PriceJob(const WorkloadPrice& price,
                                                const predictor::JobSize& job);
absl::StatusOr<predictor::JobEstimate> PriceJob(const PlannedPrice& price,
                                                const predictor::JobSize& job);

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_PRICER_H_

// The one road from a question to an answer: what Predict, PredictBatch and
// Recommend ask to turn (model, target GPU, workload, layout, job size) into
// a time.
//
// A Query names everything a question asks; Pricer::Ask answers it. On the
// way the Pricer keeps what makes a repeated question cheap, each cache
// bounded and keyed by inputs that do not change under it: the described
// workload by its key (a description is a function of the workload alone),
// a pricing plan per model and node (predictor::PricingPlan: the node's
// rates and the models' tables worked out once), and recent answers by
// question and model. It decides how a question is priced: on one GPU
// through the plan, or with a layout over as many GPUs as it lays the step.
//
// Example:
//   Pricer pricer(store, catalog, {});
//   Query query;
//   query.target = Target::CatalogGpu("H100-SXM5-80GB");
//   query.workload = WorkloadOf(descriptor);
//   query.job = predictor::JobSize{.samples = 1'000'000, .epochs = 30};
//   absl::StatusOr<Answer> answer = pricer.Ask(query);
//   // answer->price->prediction.iteration_ms, answer->job.seconds
//
// Thread-safe.
#ifndef PERFCAST_SERVING_PRICER_H_
#define PERFCAST_SERVING_PRICER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "predictor/collectives.h"
#include "predictor/job.h"
#include "predictor/memory.h"
#include "predictor/parallel.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "predictor/python_loop.h"
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

// A workload as the caller describes it: its descriptor (or why it has
// none) and the notes an answer carries about it (PredictResponse.notes:
// caveats of the user's own implementation).
struct WorkloadDescription {
  absl::StatusOr<models::WorkloadDescriptor> descriptor;
  std::vector<std::string> notes;
};

// A query's workload. `key` identifies it: equal keys must mean equal
// workloads (perfcastd's is the request's workload fields). `describe` is
// called only the first time the Pricer meets the key (or always when the
// key is empty) and must describe that workload.
struct WorkloadRef {
  std::string key;
  std::function<WorkloadDescription()> describe;
};

// A workload already described, keyed by its spec (Recommend's).
WorkloadRef WorkloadOf(models::WorkloadDescriptor descriptor);

// Everything a question asks.
struct Query {
  std::string model_name;  // empty: the default model
  Target target;
  WorkloadRef workload;
  // Spread over several GPUs; none: one GPU. Adding a field to
  // predictor::ParallelLayout means adding it to the answer's key (pricer.cc:
  // AppendLayoutKey), which a static_assert there enforces.
  std::optional<predictor::ParallelLayout> layout;
  // The loop that runs the step: python (the API's default) adds a Python
  // loop's host work to the agent's C++ step (predictor/python_loop.h) on
  // one GPU; a layout is priced alike for both.
  models::Loop loop = models::Loop::kPython;
  // The job to time, or why the request has none: reported after the
  // question's own errors, as Predict always has.
  absl::StatusOr<predictor::JobSize> job = predictor::JobSize{};
};

// The job-independent answer to a question: what an answer cache keeps.
struct Price {
  std::shared_ptr<const LoadedModel> model;
  std::shared_ptr<const models::Node> node;  // the target as priced
  // What was priced (a Hugging Face config or torchvision name resolved),
  // and the description's notes. Copied, not shared: a kept answer must not
  // pin the whole description past the description cache's bound.
  models::WorkloadSpec workload;
  std::vector<std::string> notes;
  // One iteration: a single GPU's, or with a layout the whole step's (see
  // predictor::AsPrediction).
  predictor::Prediction prediction;
  // With a multi-GPU layout: the step's parts, memory and links.
  std::optional<predictor::ParallelPrediction> parallel;
  // The step's peak device memory per GPU, with its band, and that it fits
  // (a layout's parts are in `parallel`).
  predictor::MemoryEstimate memory;
  predictor::MemoryVerdict memory_verdict;
  // On one GPU, a model workload: the loop priced (prediction.loop and
  // .python say how) and what the step dispatches; none for a layout or an
  // operation.
  std::optional<models::Loop> loop;
  predictor::HostWork host_work;
  int64_t batch_size = 0;  // samples per iteration (global)
  double cv_mape = 0;      // of the level that answered
};

// A question's answer: the price, shared with the answer cache, and the job.
struct Answer {
  std::shared_ptr<const Price> price;
  predictor::JobEstimate job;
};

// One layout of a question, as Pricer::PriceLayouts prices it.
struct LayoutPrice {
  predictor::ParallelLayout layout;
  predictor::MemoryEstimate memory;  // per GPU
  // Ask's price of the question with this layout (one GPU's for the plain
  // single-GPU layout); unset (an error saying why) when it does not fit.
  absl::StatusOr<std::shared_ptr<const Price>> price =
      absl::FailedPreconditionError("does not fit");
};

class Pricer {
 public:
  struct Options {
    // How stale a cached model or node may get when another process writes
    // the store; this process's own fits are visible at once. A kept answer
    // lives as long as a node may be cached.
    absl::Duration model_recheck = absl::Seconds(1);
    absl::Duration node_recheck = absl::Seconds(1);
    // Whether answers are kept; off, every question is priced afresh.
    bool keep_answers = true;
  };

  // `store` and `catalog` must outlive the pricer. A catalog GPU target may
  // also name the GPU model of a registered node (a spec file's GPU): it is
  // priced from that spec, as a catalog GPU is.
  Pricer(db::Store& store, const models::GpuCatalog& catalog, Options options);
  Pricer(const Pricer&) = delete;
  Pricer& operator=(const Pricer&) = delete;

  // Answers `query`: on one GPU, or with a layout on as many as it lays the
  // step over (a registered node limits the layout to its GPU count and
  // lends its measured all-reduce link). Errors, in this order:
  // InvalidArgument for an empty target name, NotFound for an unknown node
  // or catalog GPU (see GpuCatalog::Find for short names); the description's
  // error; NotFound for a missing model; models::CheckPrecision's error for a
  // precision the GPU has no path for; FailedPrecondition, saying how much
  // it needs and the GPU holds and the nearest layout that fits, when a
  // one-GPU step does not fit in the GPU's memory; InvalidArgument when the
  // node lacks usable rates or the layout is not valid for the workload
  // (predictor::ValidateLayout); FailedPrecondition with the memory per GPU,
  // its breakdown and the nearest change that fits when the layout does not
  // fit (predictor::CheckLayoutFits: the one memory model of every layout);
  // FailedPrecondition when the model cannot price this workload or answers
  // a non-positive or non-finite time; then the job's error, or
  // predictor::EstimateJob's.
  absl::StatusOr<Answer> Ask(const Query& query);

  // Prices `query` in each of `layouts` (its own layout is ignored): each
  // layout's memory per GPU from the one layout memory model and, where it
  // fits on the target's GPU, the price Ask gives that question — through
  // the same code, with what the layouts share (each micro-batch's
  // description and single-GPU prediction, each tensor-parallel degree's
  // operation times) worked out once. The answers are not kept: a search
  // would flood the answer cache. Errors: Ask's for the target, workload
  // and model; a layout's own error is its price's.
  absl::StatusOr<std::vector<LayoutPrice>> PriceLayouts(
      const Query& query, const std::vector<predictor::ParallelLayout>& layouts);

  // The latest model of `name` (empty: the default model); see ModelCache.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Model(absl::string_view name);
  // Makes a model this process just saved the latest of its name at once.
  void ModelSaved(std::shared_ptr<const LoadedModel> loaded) { models_.Put(std::move(loaded)); }

  // The node `target` names; errors as Ask's first two.
  absl::StatusOr<std::shared_ptr<const models::Node>> ResolveTarget(const Target& target);

  // Descriptions kept (for tests: a workload is described once per key).
  size_t described_workloads() { return descriptions_.size(); }

 private:
  // The spec of a registered node whose GPU model is `name` (any case), as
  // a target; else NotFound: `not_in_catalog` with the registered models
  // nearest to `name` added.
  absl::StatusOr<std::shared_ptr<const models::Node>> RegisteredGpu(
      absl::string_view name, const absl::Status& not_in_catalog);

  // A model's plan for one node, kept while both are current.
  struct Planned {
    Planned(std::shared_ptr<const LoadedModel> m, std::shared_ptr<const models::Node> n)
        : model(std::move(m)), node(std::move(n)), plan(model->model, *node) {}
    std::shared_ptr<const LoadedModel> model;
    std::shared_ptr<const models::Node> node;
    predictor::PricingPlan plan;  // refers to model->model
  };
  // A workload described once and prepared for pricing.
  struct Described {
    absl::StatusOr<models::WorkloadDescriptor> descriptor;
    std::vector<std::string> notes;
    // Points into `descriptor`: set in place, never moved with it.
    std::optional<predictor::PreparedWorkload> prepared;
  };

  // `workload` described, from the cache when its key was met before.
  std::shared_ptr<const Described> Describe(const WorkloadRef& workload);
  // The node a layout is priced on (its links completed from the catalog)
  // and the options its target gives (a registered node's GPU count and
  // measured link).
  struct Linked {
    models::Node node;
    predictor::ParallelOptions options;
  };
  Linked LinkedFor(const Query& query, const models::Node& node);
  // The job-independent answer to `query` on `node` with `model`; a layout
  // is priced by `plan` when one is given (it must be LinkedFor's for this
  // query's target, model and workload).
  absl::StatusOr<std::shared_ptr<const Price>> PriceQuery(
      const Query& query, std::shared_ptr<const LoadedModel> model,
      std::shared_ptr<const models::Node> node, const Described& described,
      predictor::ParallelPlan* plan = nullptr);
  // The node's bus bandwidth and latency from its all-reduce benchmark
  // profiles (perfcast-agent collectives), when it has at least two sizes.
  std::optional<predictor::Link> MeasuredLink(const std::string& node_name);
  // `model`'s plan for `node`: kept per model and node name, built again
  // when either is a new object (a refit, a node changed in the store).
  std::shared_ptr<const Planned> PlanFor(const std::shared_ptr<const LoadedModel>& model,
                                         const std::shared_ptr<const models::Node>& node);

  db::Store& store_;
  const models::GpuCatalog& catalog_;
  const Options options_;
  ModelCache models_;
  NodeCache nodes_;
  AnswerCache<Described> descriptions_;
  AnswerCache<Planned> plans_;
  AnswerCache<Price> answers_;
  // Catalog GPUs as nodes, built on first use and checked again after
  // node_recheck for the Python probes of registered nodes of that GPU
  // model (the catalog itself never changes). Keyed by the names asked for
  // and by the catalog's own name, so that every spelling of a GPU shares
  // one node (and its plans).
  struct CatalogNode {
    std::shared_ptr<const models::Node> node;
    absl::Time checked;
  };
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, CatalogNode> catalog_nodes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace perfcast::serving

#endif  // PERFCAST_SERVING_PRICER_H_

#include "serving/pricer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "models/precision_support.h"
#include "predictor/summary.h"

namespace perfcast::serving {
namespace {

// Plans kept: a plan per model and node in use (a few kB each).
constexpr size_t kMaxPlans = 1'000;
// Answers kept (each a price: a prediction's numbers and labels).
constexpr size_t kMaxAnswers = 10'000;
// Described workloads kept (a large model's descriptor holds a few hundred
// operations: tens of kB).
constexpr size_t kMaxDescriptions = 2'000;

absl::Status CheckFinite(const predictor::Prediction& p) {
  bool finite = std::isfinite(p.iteration_ms) && std::isfinite(p.lo_ms) && std::isfinite(p.hi_ms) &&
                p.iteration_ms > 0;
  for (const auto& [op_class, ms] : p.breakdown_ms) finite = finite && std::isfinite(ms);
  if (!finite) return absl::FailedPreconditionError("the model predicts a non-finite time");
  return absl::OkStatus();
}

// Appends `text` so that no two strings append the same bytes.
void AppendString(absl::string_view text, std::string* out) {
  absl::StrAppend(out, text.size(), ":", text);
}

// Appends a key of every field of `layout`.
void AppendLayoutKey(const predictor::ParallelLayout& layout, std::string* key) {
  // A field added to ParallelLayout must join the key, or two questions
  // that differ in it would share an answer.
  static_assert(sizeof(predictor::ParallelLayout) == 7 * sizeof(int),
                "a field added to ParallelLayout must join AppendLayoutKey");
  absl::StrAppend(key, layout.data, ",", layout.tensor, ",", layout.pipeline, ",",
                  layout.micro_batches, ",", layout.zero, ",",
                  static_cast<int>(layout.framework), ",",
                  layout.activation_checkpointing ? 1 : 0);
}

// Identifies what `query` asks, its model and job aside.
void AnswerKey(const Query& query, std::string* key) {
  key->clear();
  absl::StrAppend(key, static_cast<int>(query.target.kind), ",");
  AppendString(query.model_name, key);
  AppendString(query.target.name, key);
  AppendString(query.workload.key, key);
  absl::StrAppend(key, static_cast<int>(query.loop), ",");
  if (query.layout.has_value()) AppendLayoutKey(*query.layout, key);
}

}  // namespace

WorkloadRef WorkloadOf(models::WorkloadDescriptor descriptor) {
  WorkloadRef ref;
  // A spec key names a description (models::Describe is a function of the
  // spec) with the implementation its source set; the prefix keeps it apart
  // from any other caller's keys.
  ref.key = absl::StrCat("spec:", descriptor.spec.Key(), "/syncs:",
                         descriptor.implementation.host_syncs_per_forward, "/slow:",
                         descriptor.implementation.attention_slow_path ? 1 : 0, "/heavy:",
                         descriptor.implementation.heavy_python_dispatch ? 1 : 0);
  ref.describe = [descriptor = std::make_shared<const models::WorkloadDescriptor>(
                      std::move(descriptor))] { return WorkloadDescription{*descriptor, {}}; };
  return ref;
}

Pricer::Pricer(db::Store& store, const models::GpuCatalog& catalog, Options options)
    : store_(store),
      catalog_(catalog),
      options_(options),
      models_(store, options.model_recheck),
      nodes_(store, options.node_recheck),
      descriptions_(kMaxDescriptions, absl::InfiniteDuration()),
      plans_(kMaxPlans, absl::InfiniteDuration()),
      answers_(kMaxAnswers, options.node_recheck) {}

absl::StatusOr<std::shared_ptr<const LoadedModel>> Pricer::Model(absl::string_view name) {
  return models_.Latest(ModelName(name));
}

absl::StatusOr<std::shared_ptr<const models::Node>> Pricer::ResolveTarget(const Target& target) {
  switch (target.kind) {
    case Target::Kind::kNode:
      if (target.name.empty()) return absl::InvalidArgumentError("node_name is empty");
      return nodes_.Get(target.name);
    case Target::Kind::kCatalogGpu: {
      if (target.name.empty()) return absl::InvalidArgumentError("catalog_gpu is empty");
      const absl::Time now = absl::Now();
      {
        absl::MutexLock lock(&mu_);
        auto it = catalog_nodes_.find(target.name);
        if (it != catalog_nodes_.end() && now - it->second.checked < options_.node_recheck) {
          return it->second.node;
        }
      }
      absl::StatusOr<models::GpuSpec> found = catalog_.Find(target.name);
      if (found.status().code() == absl::StatusCode::kNotFound) {
        return RegisteredGpu(target.name, found.status());
      }
      ASSIGN_OR_RETURN(models::GpuSpec spec, std::move(found));
      // The Python probes of the registered nodes of this GPU model price its
      // Python loop; nodes are registered and probed while the server runs,
      // so they are read again as often as a node may be cached.
      db::NodeFilter same_gpu;
      same_gpu.gpu_model = spec.model;
      std::vector<double> probes;
      RETURN_IF_ERROR(db::ForEachNode(store_, same_gpu, [&](models::Node& node) {
        if (node.measured.python_op_us.has_value()) probes.push_back(*node.measured.python_op_us);
      }));
      absl::MutexLock lock(&mu_);
      // Names differ in case or spelling per request; a bounded number of
      // them are worth keeping.
      if (catalog_nodes_.size() > 4 * catalog_.gpus().size() + 64) catalog_nodes_.clear();
      CatalogNode& canonical = catalog_nodes_[spec.model];
      // The same node object while nothing changed keeps its plans.
      if (canonical.node == nullptr || canonical.node->measured.python_op_us_of_gpu != probes) {
        auto node = std::make_shared<models::Node>();
        node->name = absl::StrCat("catalog:", spec.model);
        node->gpu = std::move(spec);
        node->source = models::NodeSource::kCatalog;
        node->measured.python_op_us_of_gpu = std::move(probes);
        canonical.node = std::move(node);
      }
      canonical.checked = now;
      const CatalogNode entry = canonical;  // the insertion below may move it
      catalog_nodes_[target.name] = entry;
      return entry.node;
    }
  }
  return absl::InvalidArgumentError("a target is required: node_name or catalog_gpu");
}

absl::StatusOr<std::shared_ptr<const models::Node>> Pricer::RegisteredGpu(
    absl::string_view name, const absl::Status& not_in_catalog) {
  // Not cached: a model registered or deregistered by another call counts at
  // once, and the registry is read only for names the catalog lacks.
  std::optional<models::GpuSpec> spec;
  std::vector<std::string> models;
  RETURN_IF_ERROR(db::ForEachNode(store_, {}, [&](models::Node& node) {
    if (node.gpu_count == 0) return;
    if (!spec.has_value() && absl::EqualsIgnoreCase(node.gpu.model, name)) spec = node.gpu;
    models.push_back(node.gpu.model);
  }));
  if (!spec.has_value()) {
    std::vector<std::string> nearest = models::NearestNames(name, models, 3);
    if (nearest.empty()) return not_in_catalog;
    return absl::NotFoundError(absl::StrCat(not_in_catalog.message(), "; registered GPU models near it: ",
                                            absl::StrJoin(nearest, ", ")));
  }
  auto node = std::make_shared<models::Node>();
  node->name = absl::StrCat("gpu:", spec->model);
  node->gpu = *std::move(spec);
  node->source = models::NodeSource::kSpecFile;
  return node;
}

absl::StatusOr<Answer> Pricer::Ask(const Query& query) {
  absl::StatusOr<std::shared_ptr<const LoadedModel>> model = Model(query.model_name);
  thread_local std::string key;
  std::shared_ptr<const Price> price;
  const bool keep = options_.keep_answers && model.ok() && !query.workload.key.empty();
  if (keep) {
    AnswerKey(query, &key);
    price = answers_.Find(key, (*model)->meta.id);
  }
  if (price == nullptr) {
    // The question's own errors before the server's (no model yet).
    ASSIGN_OR_RETURN(std::shared_ptr<const models::Node> node, ResolveTarget(query.target));
    std::shared_ptr<const Described> described = Describe(query.workload);
    RETURN_IF_ERROR(described->descriptor.status());
    RETURN_IF_ERROR(model.status());
    ASSIGN_OR_RETURN(price, PriceQuery(query, *model, std::move(node), *described));
    if (keep) answers_.Put(key, (*model)->meta.id, price);
  }
  ASSIGN_OR_RETURN(predictor::JobSize job, query.job);
  ASSIGN_OR_RETURN(predictor::JobEstimate estimate,
                   predictor::EstimateJob(price->prediction, job, price->batch_size));
  return Answer{std::move(price), estimate};
}

std::shared_ptr<const Pricer::Described> Pricer::Describe(const WorkloadRef& workload) {
  if (!workload.key.empty()) {
    if (auto hit = descriptions_.Find(workload.key, /*model_id=*/0)) return hit;
  }
  auto described = std::make_shared<Described>();
  WorkloadDescription description = workload.describe();
  described->descriptor = std::move(description.descriptor);
  described->notes = std::move(description.notes);
  if (described->descriptor.ok()) described->prepared.emplace(*described->descriptor);
  // A description is a function of the workload alone: an entry never goes stale.
  if (!workload.key.empty()) descriptions_.Put(workload.key, /*model_id=*/0, described);
  return described;
}

Pricer::Linked Pricer::LinkedFor(const Query& query, const models::Node& node) {
  Linked linked;
  linked.node = node;
  // Nodes stored before the link fields existed take them from the catalog.
  models::CompleteFromCatalog(catalog_, linked.node.gpu);
  if (query.target.kind == Target::Kind::kNode) {
    linked.options.max_gpus = std::max(1, linked.node.gpu_count);
    linked.options.gpus_per_node = linked.options.max_gpus;
    linked.options.measured_link = MeasuredLink(linked.node.name);
  }
  return linked;
}

absl::StatusOr<std::vector<LayoutPrice>> Pricer::PriceLayouts(
    const Query& query, const std::vector<predictor::ParallelLayout>& layouts) {
  ASSIGN_OR_RETURN(std::shared_ptr<const models::Node> node, ResolveTarget(query.target));
  std::shared_ptr<const Described> described = Describe(query.workload);
  RETURN_IF_ERROR(described->descriptor.status());
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedModel> model, Model(query.model_name));
  const models::WorkloadSpec& spec = described->descriptor->spec;
  Linked linked = LinkedFor(query, *node);
  linked.options.implementation = described->descriptor->implementation;
  predictor::ParallelPlan plan(model->model, spec, linked.node, linked.options);
  Query one;
  one.model_name = query.model_name;
  one.target = query.target;
  one.loop = query.loop;
  std::vector<LayoutPrice> out;
  out.reserve(layouts.size());
  for (const predictor::ParallelLayout& layout : layouts) {
    LayoutPrice& priced = out.emplace_back();
    priced.layout = layout;
    if (layout.single_gpu()) {
      priced.memory = predictor::EstimateMemory(model->model.memory,
                                                described->prepared->memory_inputs());
    } else {
      absl::StatusOr<predictor::LayoutMemory> memory = plan.Memory(layout);
      if (!memory.ok()) {
        priced.price = memory.status();
        continue;
      }
      priced.memory = predictor::AsMemoryEstimate(*memory);
    }
    if (!predictor::CheckMemoryFit(priced.memory, node->gpu).fits) continue;
    one.layout.reset();
    if (!layout.single_gpu()) one.layout = layout;
    priced.price = PriceQuery(one, model, node, *described, &plan);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const Price>> Pricer::PriceQuery(
    const Query& query, std::shared_ptr<const LoadedModel> model,
    std::shared_ptr<const models::Node> node, const Described& described,
    predictor::ParallelPlan* plan) {
  const models::WorkloadDescriptor& workload = *described.descriptor;
  // A precision the GPU has no native path for is refused or priced as what
  // PyTorch runs there, with a note: never silently at full speed.
  ASSIGN_OR_RETURN(std::optional<std::string> precision_note,
                   models::CheckPrecision(*node, workload.spec));
  auto price = std::make_shared<Price>();
  if (!query.layout.has_value()) {
    price->memory = predictor::EstimateMemory(model->model.memory,
                                              described.prepared->memory_inputs());
    price->memory_verdict = predictor::CheckMemoryFit(price->memory, node->gpu);
    if (!price->memory_verdict.fits) {
      // The nearest layout that fits, from the same memory model that
      // prices layouts.
      std::string reason = price->memory_verdict.reason;
      const int max_gpus = query.target.kind == Target::Kind::kNode ? std::max(1, node->gpu_count) : 0;
      if (std::optional<predictor::ParallelLayout> nearest = predictor::NearestFittingLayout(
              model->model.memory, workload.spec, node->gpu, {}, max_gpus)) {
        absl::StrAppend(&reason, "; fits with ",
                        predictor::DescribeChange(predictor::ParallelLayout{}, *nearest));
      }
      return absl::FailedPreconditionError(reason);
    }
    ASSIGN_OR_RETURN(price->prediction,
                     PlanFor(model, node)->plan.Predict(*described.prepared, query.loop));
    if (workload.spec.kind == models::WorkloadKind::kModel) {
      price->loop = query.loop;
      price->host_work = predictor::HostWorkOf(workload);
    }
  } else {
    std::optional<predictor::ParallelPlan> own;
    if (plan == nullptr) {
      Linked linked = LinkedFor(query, *node);
      linked.options.implementation = workload.implementation;
      plan = &own.emplace(model->model, workload.spec, linked.node, linked.options);
    }
    ASSIGN_OR_RETURN(predictor::ParallelPrediction parallel, plan->Predict(*query.layout));
    RETURN_IF_ERROR(predictor::CheckLayoutFits(model->model.memory, workload.spec,
                                               plan->node().gpu, *query.layout, parallel.memory,
                                               plan->options().max_gpus));
    price->prediction = predictor::AsPrediction(parallel);
    price->memory = predictor::AsMemoryEstimate(parallel.memory);
    price->memory_verdict = predictor::CheckMemoryFit(price->memory, plan->node().gpu);
    price->parallel = std::move(parallel);
  }
  RETURN_IF_ERROR(CheckFinite(price->prediction));
  price->cv_mape = predictor::PredictionCvMape(model->model, workload.spec.phase,
                                               price->prediction.method, model->meta.cv_mape);
  price->model = std::move(model);
  price->node = std::move(node);
  price->workload = workload.spec;
  price->notes = described.notes;
  if (precision_note.has_value()) price->notes.push_back(*std::move(precision_note));
  if (price->prediction.loop == models::Loop::kPython) {
    price->notes.push_back(
        predictor::PythonLoopNote(price->prediction.python.cost, price->node->name));
  }
  price->batch_size = workload.spec.batch_size;
  return price;
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

}  // namespace perfcast::serving

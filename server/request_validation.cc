#include "server/request_validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/model_source.h"
#include "predictor/layout_search.h"
#include "proto/convert.h"

namespace perfcast::server {
namespace {

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::StatusOr<models::Node> NodeFromRegisterRequest(const v1::RegisterNodeRequest& request,
                                                     const models::GpuCatalog& catalog) {
  models::Node node;
  node.name = request.name();
  if (node.name.empty()) return absl::InvalidArgumentError("node name is required");
  switch (request.hardware_case()) {
    case v1::RegisterNodeRequest::kCatalogGpu: {
      ASSIGN_OR_RETURN(models::GpuSpec spec, catalog.Find(request.catalog_gpu()));
      node.gpu = std::move(spec);
      node.source = models::NodeSource::kCatalog;
      break;
    }
    case v1::RegisterNodeRequest::kGpu: {
      node.gpu = proto::FromProto(request.gpu());
      node.source = models::NodeSource::kSpecFile;
      // An agent's fingerprint may lack what only a spec sheet says; a spec
      // file must say what prediction needs.
      const bool measured = proto::FromProto(request.measured()) != models::MeasuredRates{};
      if (absl::Status s = models::ValidateGpuSpec(
              node.gpu, measured ? models::SpecOrigin::kAgent : models::SpecOrigin::kSpecFile);
          !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("GPU spec: ", s.message()));
      }
      break;
    }
    case v1::RegisterNodeRequest::HARDWARE_NOT_SET:
      return absl::InvalidArgumentError("a node needs its GPU: a catalog name or a spec");
  }
  if (request.gpu_count() < 0 || request.gpu_count() > models::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(absl::StrCat("GPU count must be in [0, ",
                                                   models::kMaxGpusPerNode, "], got ",
                                                   request.gpu_count()));
  }
  node.gpu_count = request.gpu_count() == 0 ? 1 : request.gpu_count();
  for (const auto& [key, value] : request.labels()) node.labels[key] = value;
  node.host = proto::FromProto(request.host());
  node.measured = proto::FromProto(request.measured());
  // Measured rates mean an agent ran there, whatever the spec came from.
  if (node.measured != models::MeasuredRates{}) node.source = models::NodeSource::kAgent;
  return node;
}

absl::Status ValidateNodeName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("node name is required");
  return absl::OkStatus();
}

absl::StatusOr<db::NodeFilter> NodeFilterFromRequest(const v1::ListNodesRequest& request) {
  db::NodeFilter filter;
  filter.gpu_model = request.gpu_model();
  for (const auto& [key, value] : request.labels()) filter.labels[key] = value;
  filter.page_size = request.page_size() == 0 ? 100 : request.page_size();
  filter.page_token = request.page_token();
  return filter;
}

absl::StatusOr<models::Node> NodeFromImport(const v1::Node& wire,
                                            const models::GpuCatalog& catalog) {
  ASSIGN_OR_RETURN(models::Node node, proto::FromProto(wire));
  // Agents know what they measured, not the vendor's peak rates; the
  // predictor learns per-architecture efficiencies from nodes with both.
  models::CompleteFromCatalog(catalog, node.gpu);
  return node;
}

absl::StatusOr<ExportQuery> ExportQueryFromRequest(const v1::ExportRequest& request) {
  ExportQuery query;
  db::ProfileFilter& filter = query.filter;
  filter.node_name = request.node_name();
  filter.gpu_model = request.gpu_model();
  filter.family = request.family();
  if (request.phase() != v1::PHASE_UNSPECIFIED) {
    ASSIGN_OR_RETURN(models::Phase phase, proto::FromProto(request.phase()));
    filter.phase = phase;
  }
  if (request.kind() != v1::WORKLOAD_KIND_UNSPECIFIED) {
    ASSIGN_OR_RETURN(models::WorkloadKind kind, proto::FromProto(request.kind()));
    filter.kind = kind;
  }
  if (request.since_us() < 0 || request.until_us() < 0 || request.limit() < 0 ||
      request.batch_size() < 0) {
    return absl::InvalidArgumentError("since, until, limit and batch size must be non-negative");
  }
  // 0 leaves a bound open (proto3 cannot tell it from unset).
  if (request.since_us() != 0) filter.since_us = request.since_us();
  if (request.until_us() != 0) filter.until_us = request.until_us();
  if (request.method_version() < 0) {
    return absl::InvalidArgumentError("method_version must be non-negative");
  }
  if (request.method_version() != 0) filter.method_version = request.method_version();
  filter.limit = request.limit();
  query.batch_size = request.batch_size() == 0 ? 1000 : request.batch_size();
  return query;
}

namespace {

// The largest config.json a request may carry: real ones are a few KiB.
constexpr size_t kMaxConfigBytes = 1 << 20;

// A workload given as a Hugging Face config or a torchvision name, with
// family and params resolved (see models/model_source.h).
absl::StatusOr<v1::Workload> ResolveModelSource(const v1::Workload& w) {
  if (!w.hf_config_json().empty() && !w.torchvision().empty()) {
    return absl::InvalidArgumentError(
        "workload: give hf_config_json or torchvision, not both");
  }
  if (!w.family().empty()) {
    return absl::InvalidArgumentError(
        "workload: family must be empty with hf_config_json or torchvision (it is resolved)");
  }
  const bool config = !w.hf_config_json().empty();
  const std::string allowed = config ? "seq_len" : "image";
  for (const auto& [name, value] : w.params()) {
    if (name != allowed) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload.params: only '", allowed, "' goes with ",
                       config ? "hf_config_json" : "torchvision", ", not '", name, "'"));
    }
  }
  // Absent means the default (the model's maximum positions, 224 pixels); a
  // size that is given must be one.
  const auto given = w.params().find(allowed);
  const int64_t size = given == w.params().end() ? 0 : given->second;
  if (given != w.params().end() && size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.params: '", allowed, "' must be >= 1, got ", size));
  }
  if (w.hf_config_json().size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload.hf_config_json: ", w.hf_config_json().size(), " bytes (at most ",
        kMaxConfigBytes, ")"));
  }
  absl::StatusOr<models::ResolvedModel> model =
      config ? models::FromHuggingFaceConfig(w.hf_config_json(), size)
             : models::FromTorchvisionName(w.torchvision(), size);
  if (!model.ok()) return Prefixed("workload: ", model.status());
  v1::Workload resolved = w;
  resolved.clear_hf_config_json();
  resolved.clear_torchvision();
  resolved.set_kind(v1::WORKLOAD_KIND_MODEL);
  resolved.set_family(model->family);
  resolved.mutable_params()->clear();
  for (const auto& [name, value] : model->params) (*resolved.mutable_params())[name] = value;
  return resolved;
}

}  // namespace

absl::StatusOr<models::WorkloadDescriptor> DescribeWorkload(const v1::PredictRequest& request) {
  if (!request.has_workload()) return absl::InvalidArgumentError("workload is required");
  v1::Workload w = request.workload();
  if (!w.hf_config_json().empty() || !w.torchvision().empty()) {
    ASSIGN_OR_RETURN(v1::Workload resolved, ResolveModelSource(w));
    w = std::move(resolved);
  }
  if (w.family().empty()) return absl::InvalidArgumentError("workload.family is required");
  if (w.batch_size() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.batch_size must be >= 1, got ", w.batch_size()));
  }
  absl::StatusOr<models::WorkloadSpec> spec = proto::FromProto(w);
  if (!spec.ok()) return Prefixed("workload: ", spec.status());
  absl::StatusOr<models::WorkloadDescriptor> descriptor = models::Describe(*spec);
  if (!descriptor.ok()) return Prefixed("workload: ", descriptor.status());
  const v1::Workload& given = request.workload();
  if (!given.hf_config_json().empty() || !given.torchvision().empty()) {
    descriptor->implementation = models::ImplementationEffectsOf(
        given.torchvision().empty() ? models::ModelOrigin::kHuggingFace
                                    : models::ModelOrigin::kTorchvision,
        descriptor->spec.family, models::IsMixedPrecision(descriptor->spec.precision),
        descriptor->spec.phase == models::Phase::kTrain);
  }
  return descriptor;
}

absl::StatusOr<predictor::JobSize> JobFromRequest(const v1::PredictRequest& request) {
  if (!request.has_job()) {
    return absl::InvalidArgumentError("job is required: samples and epochs, or iterations");
  }
  predictor::JobSize job{.samples = request.job().samples(),
                         .epochs = request.job().epochs(),
                         .iterations = request.job().iterations()};
  RETURN_IF_ERROR(predictor::ValidateJobSize(job));
  return job;
}

namespace {

// Appends `text` so that no two strings append the same bytes.
void AppendString(absl::string_view text, std::string* out) {
  absl::StrAppend(out, text.size(), ":", text);
}

}  // namespace

void AppendWorkloadKey(const v1::Workload& w, std::string* key) {
  absl::StrAppend(key, static_cast<int>(w.kind()), ",", w.batch_size(), ",",
                  static_cast<int>(w.precision()), ",", static_cast<int>(w.phase()), ",",
                  // Unset means python: one key for one answer.
                  w.loop() == v1::LOOP_CPP ? "cpp," : "python,");
  AppendString(w.family(), key);
  AppendString(w.optimizer(), key);
  AppendString(w.hf_config_json(), key);
  AppendString(w.torchvision(), key);
  absl::InlinedVector<const google::protobuf::MapPair<std::string, int64_t>*, 8> params;
  for (const auto& entry : w.params()) params.push_back(&entry);
  std::sort(params.begin(), params.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : params) {
    AppendString(entry->first, key);
    absl::StrAppend(key, "=", entry->second, ",");
  }
}

absl::StatusOr<models::Loop> LoopFromWorkload(const v1::Workload& workload) {
  absl::StatusOr<models::Loop> loop = proto::FromProto(workload.loop());
  if (!loop.ok()) return Prefixed("workload.loop: ", loop.status());
  return loop;
}

absl::StatusOr<serving::Query> QueryFromRequest(const v1::PredictRequest& request) {
  serving::Query query;
  ASSIGN_OR_RETURN(query.target, TargetFromRequest(request));
  query.model_name = request.model_name();
  ASSIGN_OR_RETURN(query.layout, LayoutFromRequest(request));
  ASSIGN_OR_RETURN(query.loop, LoopFromWorkload(request.workload()));
  query.job = JobFromRequest(request);
  // An absent workload is never kept (its error is priced afresh): an empty key.
  if (request.has_workload()) {
    query.workload.key = "w";
    AppendWorkloadKey(request.workload(), &query.workload.key);
  }
  query.workload.describe = [&request] {
    serving::WorkloadDescription described{DescribeWorkload(request), {}};
    const v1::Workload& w = request.workload();
    if (described.descriptor.ok() && (!w.torchvision().empty() || !w.hf_config_json().empty())) {
      const models::WorkloadSpec& spec = described.descriptor->spec;
      described.notes = models::ImplementationCaveats(
          w.torchvision().empty() ? models::ModelOrigin::kHuggingFace
                                  : models::ModelOrigin::kTorchvision,
          spec.family,
          models::IsMixedPrecision(spec.precision),
          spec.phase == models::Phase::kTrain);
    }
    return described;
  };
  return query;
}

absl::StatusOr<serving::Target> TargetFromRequest(const v1::PredictRequest& request) {
  switch (request.target_case()) {
    case v1::PredictRequest::kNodeName:
      if (request.node_name().empty()) return absl::InvalidArgumentError("node_name is empty");
      return serving::Target::Node(request.node_name());
    case v1::PredictRequest::kCatalogGpu:
      if (request.catalog_gpu().empty()) {
        return absl::InvalidArgumentError("catalog_gpu is empty");
      }
      return serving::Target::CatalogGpu(request.catalog_gpu());
    case v1::PredictRequest::TARGET_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("a target is required: node_name or catalog_gpu");
}

absl::StatusOr<predictor::FitOptions> ToFitOptions(const v1::FitOptions& in) {
  predictor::FitOptions out;
  // Written so that NaN and infinities fail too.
  if (in.folds() < 0 || in.max_features() < 0 || !(in.ridge() >= 0) ||
      !(in.min_improvement() >= 0) || !std::isfinite(in.ridge()) ||
      !std::isfinite(in.min_improvement())) {
    return absl::InvalidArgumentError(
        "options: folds, max_features, ridge and min_improvement must be finite and >= 0");
  }
  if (in.folds() != 0) out.folds = in.folds();
  if (in.max_features() != 0) out.max_features = in.max_features();
  if (in.min_improvement() != 0) out.min_improvement = in.min_improvement();
  if (in.seed() != 0) out.seed = in.seed();
  out.ridge = in.ridge();
  switch (in.group_by()) {
    case v1::GROUP_BY_NONE: out.group_by = predictor::GroupBy::kNone; break;
    case v1::GROUP_BY_GPU: out.group_by = predictor::GroupBy::kGpu; break;
    case v1::GROUP_BY_FAMILY: out.group_by = predictor::GroupBy::kFamily; break;
    case v1::GROUP_BY_ARCHITECTURE: out.group_by = predictor::GroupBy::kArchitecture; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("options.group_by: unknown value ", in.group_by()));
  }
  if (in.level1_only() && in.level2_only()) {
    return absl::InvalidArgumentError("options: level1_only and level2_only exclude each other");
  }
  out.fit_level1 = !in.level2_only();
  out.fit_level2 = !in.level1_only();
  out.calibrate = in.calibrate();
  return out;
}

absl::StatusOr<std::optional<predictor::ParallelLayout>> LayoutFromRequest(
    const v1::PredictRequest& request) {
  const v1::ParallelLayout& l = request.parallel();
  auto degree = [](int value) { return value == 0 ? 1 : value; };
  predictor::ParallelLayout layout{.data = degree(l.data_parallel()),
                                   .tensor = degree(l.tensor_parallel()),
                                   .pipeline = degree(l.pipeline_parallel()),
                                   .micro_batches = degree(l.micro_batches()),
                                   .zero = l.zero(),
                                   .activation_checkpointing = l.activation_checkpointing()};
  switch (l.framework()) {
    case v1::FRAMEWORK_UNSPECIFIED:
    case v1::FRAMEWORK_PYTORCH: layout.framework = predictor::Framework::kPytorch; break;
    case v1::FRAMEWORK_MEGATRON: layout.framework = predictor::Framework::kMegatron; break;
    case v1::FRAMEWORK_DEEPSPEED: layout.framework = predictor::Framework::kDeepspeed; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("parallel.framework: unknown value ", l.framework()));
  }
  if (layout.single_gpu()) return std::nullopt;
  return layout;
}

absl::StatusOr<predictor::ProfileSelection> SelectionFromRequest(
    const v1::ProfileSelection& selection) {
  predictor::ProfileSelection out;
  out.gpu_models.assign(selection.gpu_models().begin(), selection.gpu_models().end());
  out.exclude_gpu_models.assign(selection.exclude_gpu_models().begin(),
                                selection.exclude_gpu_models().end());
  out.families.assign(selection.families().begin(), selection.families().end());
  out.since_us = selection.since_us();
  if (selection.method_version() < 0 || selection.method_version() > models::kCurrentMethodVersion) {
    return absl::InvalidArgumentError(absl::StrCat("method_version must be in [1, ",
                                                   models::kCurrentMethodVersion, "], got ",
                                                   selection.method_version()));
  }
  if (selection.all_methods() && selection.method_version() != 0) {
    return absl::InvalidArgumentError("all_methods and method_version exclude each other");
  }
  if (selection.newest_per_gpu() && (selection.all_methods() || selection.method_version() != 0)) {
    return absl::InvalidArgumentError(
        "newest_per_gpu excludes all_methods and method_version");
  }
  if (selection.method_version() != 0) out.method_version = selection.method_version();
  out.all_methods = selection.all_methods();
  out.newest_per_gpu = selection.newest_per_gpu();
  out.exclude_imported = selection.exclude_imported();
  if (selection.phase() != v1::PHASE_UNSPECIFIED) {
    absl::StatusOr<models::Phase> parsed = proto::FromProto(selection.phase());
    if (!parsed.ok()) return Prefixed("selection.phase: ", parsed.status());
    out.phase = *parsed;
  }
  return out;
}

absl::StatusOr<predictor::EvaluateOptions> EvaluateOptionsFromRequest(
    const v1::EvaluateRequest& request) {
  ASSIGN_OR_RETURN(predictor::FitOptions fit, ToFitOptions(request.options()));
  // A calibration on held-out rows would grade answers by what they were
  // corrected toward.
  if (fit.calibrate) {
    return absl::InvalidArgumentError("options.calibrate: a fit option, not an evaluation's");
  }
  if (request.size_threshold() < 0) {
    return absl::InvalidArgumentError("size_threshold must be >= 0");
  }
  predictor::EvaluateOptions options;
  options.fit = fit;
  options.folds = fit.folds;
  options.seed = fit.seed;
  switch (request.split()) {
    case v1::SPLIT_K_FOLD: options.split = predictor::Split::kRandomKFold; break;
    case v1::SPLIT_LEAVE_ONE_GPU_OUT: options.split = predictor::Split::kLeaveOneGpuOut; break;
    case v1::SPLIT_HELD_OUT_LARGER_SIZES:
      options.split = predictor::Split::kHeldOutSizes;
      options.size_threshold = request.size_threshold();
      break;
    case v1::SPLIT_LARGEST_SIZE_PER_FAMILY:
      options.split = predictor::Split::kLargestSizePerFamily;
      break;
    case v1::SPLIT_TRAIN_TEST_GPUS:
      options.split = predictor::Split::kTrainTestGpus;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("split: unknown value ", request.split()));
  }
  const bool transfer = options.split == predictor::Split::kTrainTestGpus;
  for (const auto& [field, gpus, out] :
       {std::tuple{"train_gpus", &request.train_gpus(), &options.train_gpus},
        std::tuple{"test_gpus", &request.test_gpus(), &options.test_gpus}}) {
    if (!transfer && !gpus->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " goes with split SPLIT_TRAIN_TEST_GPUS only"));
    }
    if (transfer && gpus->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": SPLIT_TRAIN_TEST_GPUS needs at least one GPU model"));
    }
    for (const std::string& gpu : *gpus) {
      if (gpu.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": an empty GPU model"));
      if (std::find(out->begin(), out->end(), gpu) == out->end()) out->push_back(gpu);
    }
  }
  return options;
}

absl::StatusOr<RecommendQuery> RecommendQueryFromRequest(const v1::RecommendRequest& request) {
  RecommendQuery query;
  v1::PredictRequest as_predict;
  *as_predict.mutable_workload() = request.workload();
  if (request.has_job()) *as_predict.mutable_job() = request.job();
  ASSIGN_OR_RETURN(models::WorkloadDescriptor workload, DescribeWorkload(as_predict));
  query.workload = std::move(workload);
  ASSIGN_OR_RETURN(query.loop, LoopFromWorkload(request.workload()));
  if (!request.has_job()) return absl::InvalidArgumentError("job: a job size is required");
  if (absl::StatusOr<predictor::JobSize> size = JobFromRequest(as_predict); !size.ok()) {
    return size.status();
  }
  const v1::JobSize& job = request.job();
  if (job.iterations() != 0) {
    query.iterations = job.iterations();
  } else {
    const int64_t batch = query.workload.spec.batch_size;
    const int64_t per_epoch = job.samples() / batch + (job.samples() % batch != 0);
    if (per_epoch > (int64_t{1} << 53) / job.epochs()) {
      return absl::OutOfRangeError("job: more than 2^53 iterations");
    }
    query.iterations = per_epoch * job.epochs();
  }
  if (request.catalog_gpus_size() > kMaxRecommendNames ||
      request.node_names_size() > kMaxRecommendNames ||
      request.prices_size() > kMaxRecommendNames || request.gpu_counts_size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "at most ", kMaxRecommendNames, " catalog GPUs, nodes and prices, and 64 GPU counts"));
  }
  query.catalog_gpus.assign(request.catalog_gpus().begin(), request.catalog_gpus().end());
  query.node_names.assign(request.node_names().begin(), request.node_names().end());
  for (const std::string& name : query.node_names) {
    RETURN_IF_ERROR(ValidateNodeName(name));
  }
  query.catalog_only = request.catalog_only();
  query.nodes_only = request.nodes_only();
  for (const v1::GpuPrice& p : request.prices()) {
    models::GpuPrice price{p.gpu_model(), p.usd_per_gpu_hour(), p.provider(), p.offer(),
                           p.as_of(),     p.kind(),             p.source()};
    if (absl::Status s = models::ValidateGpuPrice(price); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("prices: ", s.message()));
    }
    query.prices.push_back(std::move(price));
  }
  if (!std::isfinite(request.deadline_seconds()) || request.deadline_seconds() < 0) {
    return absl::InvalidArgumentError("deadline_seconds must be finite and >= 0");
  }
  if (!std::isfinite(request.budget_usd()) || request.budget_usd() < 0) {
    return absl::InvalidArgumentError("budget_usd must be finite and >= 0");
  }
  query.deadline_seconds = request.deadline_seconds();
  query.budget_usd = request.budget_usd();
  std::set<int> counts;
  for (int count : request.gpu_counts()) {
    if (count < 1 || count > models::kMaxGpusPerNode) {
      return absl::InvalidArgumentError(absl::StrCat("gpu_counts: ", count, " is outside [1, ",
                                                     models::kMaxGpusPerNode, "]"));
    }
    counts.insert(count);
  }
  if (!request.gpu_count_spec().empty()) {
    ASSIGN_OR_RETURN(std::vector<int> parsed, predictor::ParseGpuCounts(request.gpu_count_spec()));
    counts.insert(parsed.begin(), parsed.end());
  }
  if (counts.size() > static_cast<size_t>(predictor::kMaxGpuCounts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_counts: more than ", predictor::kMaxGpuCounts, " GPU counts"));
  }
  query.gpu_counts.assign(counts.begin(), counts.end());
  if (query.gpu_counts.empty()) query.gpu_counts = {1};
  switch (request.framework()) {
    case v1::FRAMEWORK_UNSPECIFIED:
    case v1::FRAMEWORK_PYTORCH: query.framework = predictor::Framework::kPytorch; break;
    case v1::FRAMEWORK_MEGATRON: query.framework = predictor::Framework::kMegatron; break;
    case v1::FRAMEWORK_DEEPSPEED: query.framework = predictor::Framework::kDeepspeed; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("framework: unknown value ", request.framework()));
  }
  query.all_layouts = request.all_layouts();
  ASSIGN_OR_RETURN(predictor::RankBy rank_by,
                   predictor::ParseRankBy(request.rank_by().empty() ? "cost" : request.rank_by()));
  query.rank_by = rank_by;
  query.model_name = request.model_name();
  return query;
}

}  // namespace perfcast::server

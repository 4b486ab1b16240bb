#include "server/predictor_service.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "models/descriptor.h"
#include "models/gpu_prices.h"
#include "nlohmann/json.hpp"
#include "predictor/evaluate.h"
#include "predictor/predictor.h"
#include "predictor/recommend.h"
#include "proto/convert.h"
#include "server/call_timer.h"
#include "server/grpc_status.h"
#include "server/rpc_observer.h"
#include "server/request_validation.h"

namespace perfcast::server {
namespace {

constexpr char kDefaultModelName[] = "default";

std::string ModelName(const std::string& requested) {
  return requested.empty() ? kDefaultModelName : requested;
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// ---------------------------------------------------------------------------
// Profile selection

struct Selection {
  std::vector<models::Profile> profiles;
  std::map<std::string, models::Node> nodes;
  std::optional<int> method_version;  // nullopt: every method
};

// What a fit says about the data it learned from.
std::string MethodNote(const Selection& selection) {
  return selection.method_version.has_value()
             ? absl::StrCat("measurement method ", *selection.method_version)
             : "all measurement methods";
}

std::string DescribeSelection(const v1::ProfileSelection& s) {
  std::vector<std::string> parts;
  if (s.gpu_models_size() > 0) parts.push_back(absl::StrCat("gpu_models=", absl::StrJoin(s.gpu_models(), ",")));
  if (s.exclude_gpu_models_size() > 0) {
    parts.push_back(absl::StrCat("exclude_gpu_models=", absl::StrJoin(s.exclude_gpu_models(), ",")));
  }
  if (s.families_size() > 0) parts.push_back(absl::StrCat("families=", absl::StrJoin(s.families(), ",")));
  if (s.phase() != v1::PHASE_UNSPECIFIED) parts.push_back(absl::StrCat("phase=", v1::Phase_Name(s.phase())));
  if (s.since_us() != 0) parts.push_back(absl::StrCat("since_us=", s.since_us()));
  if (s.method_version() != 0) {
    parts.push_back(absl::StrCat("method_version=", s.method_version()));
  }
  return parts.empty() ? "all profiles" : absl::StrJoin(parts, " ");
}

// Every node (all pages) and the profiles the selection keeps.
// FailedPrecondition when none match.
absl::StatusOr<Selection> LoadSelection(db::Store& store, const v1::ProfileSelection& s) {
  Selection selection;
  if (absl::Status s = db::ForEachNode(
          store, {}, [&](models::Node& node) { selection.nodes[node.name] = std::move(node); });
      !s.ok()) {
    return s;
  }

  const absl::flat_hash_set<std::string> gpus(s.gpu_models().begin(), s.gpu_models().end());
  const absl::flat_hash_set<std::string> excluded(s.exclude_gpu_models().begin(),
                                                  s.exclude_gpu_models().end());
  const absl::flat_hash_set<std::string> families(s.families().begin(), s.families().end());
  absl::StatusOr<std::optional<models::Phase>> selected_phase = SelectionPhase(s);
  if (!selected_phase.ok()) return selected_phase.status();
  const std::optional<models::Phase> phase = *selected_phase;
  if (s.method_version() < 0 || s.method_version() > models::kCurrentMethodVersion) {
    return absl::InvalidArgumentError(absl::StrCat("method_version must be in [1, ",
                                                   models::kCurrentMethodVersion, "], got ",
                                                   s.method_version()));
  }
  if (s.all_methods() && s.method_version() != 0) {
    return absl::InvalidArgumentError("all_methods and method_version exclude each other");
  }
  db::ProfileFilter filter;
  if (s.since_us() != 0) filter.since_us = s.since_us();
  if (s.method_version() != 0) filter.method_version = s.method_version();
  absl::Status scanned = store.ScanProfiles(filter, [&](const models::Profile& p) {
    auto node = selection.nodes.find(p.node_name);
    if (node == selection.nodes.end()) return true;
    const std::string& gpu = node->second.gpu.model;
    if (!gpus.empty() && !gpus.contains(gpu)) return true;
    if (excluded.contains(gpu)) return true;
    if (p.workload.kind == models::WorkloadKind::kModel) {
      if (!families.empty() && !families.contains(p.workload.family)) return true;
      if (phase.has_value() && p.workload.phase != *phase) return true;
    }
    selection.profiles.push_back(p);
    return true;
  });
  if (!scanned.ok()) return scanned;
  if (selection.profiles.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no profiles match the selection (", DescribeSelection(s), ")"));
  }
  // Methods measure different quantities (a steady-state step is not a
  // synchronised one): a fit learns from one, the newest present unless the
  // request names one or asks for all.
  if (!s.all_methods()) {
    int newest = 0;
    for (const models::Profile& p : selection.profiles) newest = std::max(newest, p.method_version);
    std::erase_if(selection.profiles,
                  [&](const models::Profile& p) { return p.method_version != newest; });
    selection.method_version = newest;
  }
  return selection;
}

// ---------------------------------------------------------------------------
// Model summaries

struct ModelInfo {
  std::string target;
  std::string line;
  double cv_mape = 0;
  int64_t training_rows = 0;
};

// The one-line summary the store keeps: levels with their features, and the
// CV MAPE of the top level (rows-weighted), which is what a user's query sees.
ModelInfo Summarize(const predictor::PredictorModel& model) {
  ModelInfo info;
  auto describe = [](absl::string_view scope, const predictor::FittedModel& m) {
    return absl::StrFormat("%s[%s] %.1f%%", scope, absl::StrJoin(m.features, ","), 100 * m.cv_mape);
  };
  std::vector<std::string> l1, l2;
  double l1_err = 0, l2_err = 0;
  int64_t l1_rows = 0, l2_rows = 0;
  for (const auto& [op_class, m] : model.level1) {
    l1.push_back(describe(predictor::OpClassKey(op_class), m));
    l1_err += m.cv_mape * m.training_rows;
    l1_rows += m.training_rows;
  }
  for (const auto& [phase, m] : model.level2) {
    l2.push_back(describe(models::PhaseName(phase), m));
    l2_err += m.cv_mape * m.training_rows;
    l2_rows += m.training_rows;
  }
  const bool top_is_l2 = l2_rows > 0;
  info.target = top_is_l2 ? "iteration_ms" : "call_ms";
  info.training_rows = l1_rows + l2_rows;
  info.cv_mape = top_is_l2 ? l2_err / l2_rows : (l1_rows > 0 ? l1_err / l1_rows : 0);
  info.line = absl::StrFormat("level1: %s; level2: %s; CV MAPE %.2f%%",
                              l1.empty() ? "-" : absl::StrJoin(l1, " "),
                              l2.empty() ? "-" : absl::StrJoin(l2, " "), 100 * info.cv_mape);
  return info;
}

void ToProto(const db::StoredModel& meta, v1::ModelSummary* out) {
  out->set_id(meta.id);
  out->set_name(meta.name);
  out->set_version(meta.version);
  out->set_target(meta.target);
  out->set_summary(meta.summary);
  out->set_cv_mape(meta.cv_mape);
  out->set_created_at_us(meta.created_at_us);
}

void ToProto(const db::StoredModel& meta, const predictor::PredictorModel& model,
             v1::ModelSummary* out) {
  ToProto(meta, out);
  out->set_training_rows(Summarize(model).training_rows);
  for (const std::string& note : model.notes) out->add_notes(note);
}

// ---------------------------------------------------------------------------
// Predict helpers

// Needs ValidateJob first. FailedPrecondition rather than a NaN answer.
absl::StatusOr<predictor::JobEstimate> EstimateJob(const predictor::Prediction& p,
                                                   const v1::JobSize& job, int64_t batch_size) {
  predictor::JobEstimate estimate;
  if (job.iterations() != 0) {
    estimate.iterations = job.iterations();
    const double n = static_cast<double>(job.iterations()) / 1e3;
    estimate.seconds = n * p.iteration_ms;
    estimate.lo_seconds = n * p.lo_ms;
    estimate.hi_seconds = n * p.hi_ms;
  } else {
    absl::StatusOr<predictor::JobEstimate> e =
        predictor::EstimateJob(p, job.samples(), batch_size, job.epochs());
    if (!e.ok()) return e.status();
    estimate = *e;
  }
  if (!std::isfinite(estimate.seconds) || !std::isfinite(estimate.lo_seconds) ||
      !std::isfinite(estimate.hi_seconds)) {
    return absl::FailedPreconditionError("the model predicts a non-finite job time");
  }
  return estimate;
}

// Identifies what a query asks, job size aside: equal bytes, equal question.
std::string AnswerKey(const v1::PredictRequest& query) {
  std::string key = absl::StrCat(query.model_name(), "\x1f", static_cast<int>(query.target_case()),
                                 query.node_name(), query.catalog_gpu(), "\x1f");
  if (query.has_workload()) query.workload().AppendToString(&key);
  return key;
}

absl::Status CheckFinite(const predictor::Prediction& p) {
  bool finite = std::isfinite(p.iteration_ms) && std::isfinite(p.lo_ms) && std::isfinite(p.hi_ms) &&
                p.iteration_ms > 0;
  for (const auto& [op_class, ms] : p.breakdown_ms) finite = finite && std::isfinite(ms);
  if (!finite) return absl::FailedPreconditionError("the model predicts a non-finite time");
  return absl::OkStatus();
}

// Everything of a response that does not depend on the job size.
void EncodeMemory(const predictor::MemoryEstimate& e, const predictor::MemoryVerdict& v,
                  v1::MemoryEstimate* out) {
  out->set_peak_bytes(e.peak_bytes);
  out->set_peak_bytes_low(e.low_bytes);
  out->set_peak_bytes_high(e.high_bytes);
  out->set_required_bytes(e.required_bytes);
  out->set_device_bytes(v.device_bytes);
  out->set_fits(v.fits);
  out->set_method(e.method);
  out->set_persistent_bytes(e.terms.persistent());
  out->set_activation_bytes(e.terms.transient());
}

void EncodeCandidate(const predictor::Recommendation& r, int rank, v1::Candidate* out) {
  out->set_rank(rank);
  out->set_target(r.target);
  out->set_gpu_model(r.gpu);
  out->set_registered_node(r.registered);
  out->set_gpu_count(r.gpu_count);
  out->set_recommended(r.exclusion == predictor::Exclusion::kNone);
  out->set_excluded_by(std::string(predictor::ExclusionName(r.exclusion)));
  out->set_reason(r.reason);
  out->set_predicted(r.predicted);
  if (r.predicted) {
    out->set_iteration_ms(r.step.iteration_ms);
    out->set_iteration_ms_low(r.step.lo_ms);
    out->set_iteration_ms_high(r.step.hi_ms);
    out->set_job_seconds(r.seconds);
    out->set_job_seconds_low(r.seconds_low);
    out->set_job_seconds_high(r.seconds_high);
    out->set_meets_deadline(r.meets_deadline);
    out->set_energy_kwh(r.energy_kwh);
    out->set_energy_kwh_low(r.energy_low_kwh);
    out->set_energy_kwh_high(r.energy_high_kwh);
    out->set_rate_source(std::string(predictor::RateSourceName(r.step.rate_source)));
    out->set_method(r.step.method);
  }
  if (r.price.has_value()) {
    out->set_priced(true);
    if (r.predicted) {
      out->set_cost_usd(r.cost_usd);
      out->set_cost_usd_low(r.cost_low_usd);
      out->set_cost_usd_high(r.cost_high_usd);
    }
    v1::GpuPrice* p = out->mutable_price();
    p->set_gpu_model(r.price->gpu);
    p->set_usd_per_gpu_hour(r.price->usd_per_gpu_hour);
    p->set_provider(r.price->provider);
    p->set_offer(r.price->offer);
    p->set_as_of(r.price->as_of);
    p->set_kind(r.price->kind);
    p->set_source(r.price->source);
  }
  out->set_board_power_w(r.power.watts);
  out->set_power_utilisation(r.power.utilisation);
  out->set_power_measured(r.power.measured);
  out->set_power_source(r.power.source);
  EncodeMemory(r.memory, r.memory_verdict, out->mutable_memory());
}

void EncodePrediction(const predictor::Prediction& p, const PredictorService::LoadedModel& loaded,
                      const models::Node& node, models::Phase phase, v1::PredictResponse* out) {
  out->set_iteration_ms(p.iteration_ms);
  out->set_iteration_ms_low(p.lo_ms);
  out->set_iteration_ms_high(p.hi_ms);
  double total = 0;
  for (const auto& [op_class, ms] : p.breakdown_ms) total += ms;
  for (const auto& [op_class, ms] : p.breakdown_ms) {
    v1::OperationEstimate* op = out->add_breakdown();
    op->set_op_class(op_class);
    op->set_ms(ms);
    op->set_share(total > 0 ? ms / total : 0);
  }
  out->set_model_id(loaded.meta.id);
  out->set_model_version(loaded.meta.version);
  for (const std::string& f : p.features_used) out->add_features(f);
  for (const std::string& f : p.extrapolated) out->add_extrapolated_features(f);
  for (const std::string& c : p.uncalibrated_classes) out->add_uncalibrated_classes(c);
  out->set_rate_source(std::string(predictor::RateSourceName(p.rate_source)));
  out->set_gpu_model(node.gpu.model);
  auto level2 = loaded.model.level2.find(phase);
  out->set_cv_mape(level2 != loaded.model.level2.end() && p.method != "level1-sum"
                       ? level2->second.cv_mape
                       : loaded.meta.cv_mape);
  out->set_level(p.method == "level1-sum" ? 1 : 2);
  out->set_method(p.method);
}

void EncodeJob(const predictor::JobEstimate& job, v1::PredictResponse* out) {
  out->set_iterations(job.iterations);
  out->set_job_seconds(job.seconds);
  out->set_job_seconds_low(job.lo_seconds);
  out->set_job_seconds_high(job.hi_seconds);
}

// ---------------------------------------------------------------------------
// Evaluate helpers

void AddGroups(const std::map<std::string, predictor::ErrorSummary>& groups, int level,
               google::protobuf::RepeatedPtrField<v1::GroupError>* out) {
  for (const auto& [group, summary] : groups) {
    v1::GroupError* g = out->Add();
    g->set_group(group);
    g->set_mape(summary.mape);
    g->set_rows(summary.count);
    g->set_level(level);
  }
}

nlohmann::json ToJson(const predictor::LevelReport& report) {
  auto groups = [](const std::map<std::string, predictor::ErrorSummary>& in) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [group, s] : in) out[group] = {{"rows", s.count}, {"mape", s.mape}};
    return out;
  };
  return {{"overall", {{"rows", report.overall.count}, {"mape", report.overall.mape}}},
          {"by_gpu", groups(report.by_gpu)},
          {"by_family", groups(report.by_family)},
          {"by_precision", groups(report.by_precision)}};
}

std::vector<std::string> SelectedFeatures(const predictor::PredictorModel& model) {
  std::vector<std::string> out;
  for (const auto& [op_class, m] : model.level1) {
    for (const std::string& f : m.features) {
      out.push_back(absl::StrCat("level1/", predictor::OpClassKey(op_class), ":", f));
    }
  }
  for (const auto& [phase, m] : model.level2) {
    for (const std::string& f : m.features) {
      out.push_back(absl::StrCat("level2/", models::PhaseName(phase), ":", f));
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Caches

absl::StatusOr<std::shared_ptr<const PredictorService::LoadedModel>> PredictorService::LatestModel(
    const std::string& name) {
  std::shared_ptr<const LoadedModel> current;
  {
    absl::MutexLock lock(&mu_);
    ModelSlot& slot = models_[name];
    const absl::Time now = absl::Now();
    if (slot.loaded != nullptr && now - slot.checked_at < kModelRecheck) return slot.loaded;
    // Later callers keep the cached model while this one checks the store.
    slot.checked_at = now;
    current = slot.loaded;
  }
  absl::StatusOr<db::StoredModel> stored = store_.LatestModel(name);
  if (!stored.ok()) {
    if (current != nullptr) return current;  // models are never deleted: keep serving
    if (stored.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(
          absl::StrCat("no model named '", name, "': run perfcast fit first"));
    }
    return stored.status();
  }
  if (current != nullptr && current->meta.id == stored->id) return current;
  absl::StatusOr<predictor::PredictorModel> parsed = predictor::ParseModel(stored->payload);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat("stored model ", stored->id,
                                            " cannot be read: ", parsed.status().message()));
  }
  auto loaded = std::make_shared<LoadedModel>();
  loaded->meta = *std::move(stored);
  loaded->meta.payload.clear();
  loaded->model = *std::move(parsed);
  absl::MutexLock lock(&mu_);
  ModelSlot& slot = models_[name];
  if (slot.loaded == nullptr || slot.loaded->meta.version < loaded->meta.version) {
    slot.loaded = std::move(loaded);
  }
  return slot.loaded;
}

absl::StatusOr<models::Node> PredictorService::RegisteredNode(const std::string& name) {
  const absl::Time now = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(name);
    if (it != nodes_.end() && now - it->second.fetched_at < kNodeRecheck) return it->second.node;
  }
  absl::StatusOr<models::Node> node = store_.GetNode(name);
  // Only found nodes are cached: a node registered right after a miss must
  // be usable at once.
  if (node.ok()) {
    absl::MutexLock lock(&mu_);
    nodes_[name] = NodeSlot{node, now};
  }
  return node;
}

absl::StatusOr<models::Node> PredictorService::TargetNode(const v1::PredictRequest& request) {
  switch (request.target_case()) {
    case v1::PredictRequest::kNodeName:
      if (request.node_name().empty()) return absl::InvalidArgumentError("node_name is empty");
      return RegisteredNode(request.node_name());
    case v1::PredictRequest::kCatalogGpu: {
      absl::StatusOr<models::GpuSpec> spec = catalog_.Find(request.catalog_gpu());
      if (!spec.ok()) return spec.status();
      models::Node node;
      node.name = absl::StrCat("catalog:", spec->model);
      node.gpu = *std::move(spec);
      node.source = models::NodeSource::kCatalog;
      return node;
    }
    case v1::PredictRequest::TARGET_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("a target is required: node_name or catalog_gpu");
}

// ---------------------------------------------------------------------------
// RPCs

grpc::ServerUnaryReactor* PredictorService::Predict(grpc::CallbackServerContext* context,
                                                    const v1::PredictRequest* request,
                                                    v1::PredictResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status s = auth_.Check(*context, "Predictor.Predict"); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  reactor->Finish(PredictOne(*request, response));
  return reactor;
}

grpc::Status PredictorService::PredictOne(const v1::PredictRequest& request_ref,
                                          v1::PredictResponse* response) {
  const v1::PredictRequest* request = &request_ref;
  // Describing a workload and pricing its operations costs more than the RPC
  // itself; a repeated question is answered from the previous answer.
  std::string key = AnswerKey(*request);
  absl::StatusOr<std::shared_ptr<const LoadedModel>> current =
      LatestModel(ModelName(request->model_name()));
  if (current.ok()) {
    std::shared_ptr<const Answer> answer;
    {
      absl::MutexLock lock(&answers_mu_);
      auto it = answers_.find(key);
      if (it != answers_.end()) answer = it->second;
    }
    if (answer != nullptr && answer->model_id == (*current)->meta.id &&
        absl::Now() - answer->at < kNodeRecheck) {
      if (absl::Status job = ValidateJob(*request); !job.ok()) return ToGrpcStatus(job);
      absl::StatusOr<predictor::JobEstimate> estimate =
          EstimateJob(answer->prediction, request->job(), answer->batch_size);
      if (!estimate.ok()) return ToGrpcStatus(estimate.status());
      *response = answer->encoded;
      EncodeJob(*estimate, response);
      return grpc::Status::OK;
    }
  }

  absl::StatusOr<models::WorkloadDescriptor> descriptor = DescribeWorkload(*request);
  if (!descriptor.ok()) return ToGrpcStatus(descriptor.status());
  if (absl::Status job = ValidateJob(*request); !job.ok()) return ToGrpcStatus(job);
  absl::StatusOr<models::Node> node = TargetNode(*request);
  if (!node.ok()) return ToGrpcStatus(node.status());
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded =
      LatestModel(ModelName(request->model_name()));
  if (!loaded.ok()) return ToGrpcStatus(loaded.status());
  // A GPU the step does not fit on gets no time.
  const predictor::MemoryEstimate memory =
      predictor::EstimateMemory((*loaded)->model.memory, *descriptor);
  const predictor::MemoryVerdict fit = predictor::CheckMemoryFit(memory, node->gpu);
  if (!fit.fits) return ToGrpcStatus(absl::FailedPreconditionError(fit.reason));
  absl::StatusOr<predictor::Prediction> prediction =
      predictor::PredictDescribed((*loaded)->model, *descriptor, *node);
  if (!prediction.ok()) return ToGrpcStatus(prediction.status());
  if (absl::Status finite = CheckFinite(*prediction); !finite.ok()) return ToGrpcStatus(finite);
  absl::StatusOr<predictor::JobEstimate> job =
      EstimateJob(*prediction, request->job(), descriptor->spec.batch_size);
  if (!job.ok()) return ToGrpcStatus(job.status());
  EncodePrediction(*prediction, **loaded, *node, descriptor->spec.phase, response);
  proto::ToProto(descriptor->spec, response->mutable_workload());
  EncodeMemory(memory, fit, response->mutable_memory());
  auto answer = std::make_shared<Answer>();
  answer->model_id = (*loaded)->meta.id;
  answer->at = absl::Now();
  answer->batch_size = descriptor->spec.batch_size;
  answer->prediction = *std::move(prediction);
  answer->encoded = *response;
  EncodeJob(*job, response);
  absl::MutexLock lock(&answers_mu_);
  // Distinct questions must not grow the cache without bound.
  if (answers_.size() >= kMaxAnswers) answers_.clear();
  answers_[std::move(key)] = std::move(answer);
  return grpc::Status::OK;
}

grpc::Status PredictorService::PredictBatch(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::PredictBatchResponse, v1::PredictBatchRequest>* stream) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.PredictBatch"); !s.ok()) return s;
  const CallTimer timer(*context, max_call_);
  // Per distinct (model, target, workload) in this stream: the encoded
  // job-independent part of the answer, or the error, and the batch size.
  struct Entry {
    absl::Status status;
    v1::PredictResponse encoded;
    int64_t batch_size = 0;
    predictor::Prediction prediction;
  };
  absl::flat_hash_map<std::string, Entry> entries;
  absl::flat_hash_map<std::string, absl::StatusOr<std::shared_ptr<const LoadedModel>>> models;
  std::string key;
  v1::PredictBatchRequest request;
  v1::PredictBatchResponse response;
  int64_t rows = 0;
  while (stream->Read(&request)) {
    response.Clear();
    response.mutable_results()->Reserve(request.queries_size());
    models.clear();  // a refit between messages of a long stream takes effect
    for (const v1::PredictRequest& query : request.queries()) {
      // One message may hold many queries; a clock read per 256 costs nothing.
      if (response.results_size() % 256 == 0) {
        if (grpc::Status s = timer.Check(); !s.ok()) return s;
      }
      v1::PredictResult* result = response.add_results();
      key = AnswerKey(query);
      key.push_back(request.brief() ? 'b' : 'f');
      auto [it, inserted] = entries.try_emplace(key);
      Entry& entry = it->second;
      if (inserted) {
        entry.status = [&]() -> absl::Status {
          absl::StatusOr<models::WorkloadDescriptor> descriptor = DescribeWorkload(query);
          if (!descriptor.ok()) return descriptor.status();
          absl::StatusOr<models::Node> node = TargetNode(query);
          if (!node.ok()) return node.status();
          const std::string name = ModelName(query.model_name());
          auto model = models.find(name);
          if (model == models.end()) model = models.emplace(name, LatestModel(name)).first;
          if (!model->second.ok()) return model->second.status();
          const LoadedModel& loaded = **model->second;
          const predictor::MemoryEstimate memory =
              predictor::EstimateMemory(loaded.model.memory, *descriptor);
          const predictor::MemoryVerdict fit = predictor::CheckMemoryFit(memory, node->gpu);
          if (!fit.fits) return absl::FailedPreconditionError(fit.reason);
          absl::StatusOr<predictor::Prediction> p =
              predictor::PredictDescribed(loaded.model, *descriptor, *node);
          if (!p.ok()) return p.status();
          if (absl::Status finite = CheckFinite(*p); !finite.ok()) return finite;
          entry.batch_size = descriptor->spec.batch_size;
          entry.prediction = *std::move(p);
          if (request.brief()) {
            entry.encoded.set_iteration_ms(entry.prediction.iteration_ms);
            entry.encoded.set_iteration_ms_low(entry.prediction.lo_ms);
            entry.encoded.set_iteration_ms_high(entry.prediction.hi_ms);
            entry.encoded.set_model_id(loaded.meta.id);
            entry.encoded.set_model_version(loaded.meta.version);
            entry.encoded.set_level(entry.prediction.method == "level1-sum" ? 1 : 2);
          } else {
            EncodePrediction(entry.prediction, loaded, *node, descriptor->spec.phase,
                             &entry.encoded);
            proto::ToProto(descriptor->spec, entry.encoded.mutable_workload());
            EncodeMemory(memory, fit, entry.encoded.mutable_memory());
          }
          return absl::OkStatus();
        }();
      }
      absl::Status status = entry.status;
      absl::StatusOr<predictor::JobEstimate> job;
      if (status.ok()) status = ValidateJob(query);
      if (status.ok()) {
        job = EstimateJob(entry.prediction, query.job(), entry.batch_size);
        status = job.status();
      }
      if (!status.ok()) {
        result->set_code(static_cast<int>(status.code()));
        result->set_error(BoundedMessage(status.message()));
        continue;
      }
      v1::PredictResponse* prediction = result->mutable_prediction();
      *prediction = entry.encoded;
      EncodeJob(*job, prediction);
    }
    rows += request.queries_size();
    if (!stream->Write(response)) break;
    // A stream of distinct workloads must not grow without bound.
    if (entries.size() > 100'000) entries.clear();
  }
  if (grpc::Status s = timer.Check(); !s.ok()) return s;
  logger_.Debug("predict batch done",
                {{"request_id", RequestIdOf(*context)}, {"rows", absl::StrCat(rows)}});
  return grpc::Status::OK;
}

grpc::Status PredictorService::Fit(grpc::ServerContext* context, const v1::FitRequest* request,
                                   v1::FitResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.Fit"); !s.ok()) return s;
  // Fitting itself cannot be interrupted; the timer is checked around it, and
  // a fit that finishes past the deadline saves nothing.
  const CallTimer timer(*context, max_call_);
  const std::string name = ModelName(request->model_name());
  absl::StatusOr<predictor::FitOptions> options = ToFitOptions(request->options());
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<Selection> selection = LoadSelection(store_, request->selection());
  if (!selection.ok()) return ToGrpcStatus(Prefixed("fit: ", selection.status()));
  if (grpc::Status s = timer.Check(); !s.ok()) return s;
  absl::StatusOr<predictor::PredictorModel> model =
      predictor::Fit(selection->profiles, selection->nodes, *options);
  if (!model.ok()) return ToGrpcStatus(model.status());
  if (grpc::Status s = timer.Check(); !s.ok()) return s;
  // When no feature varies (one workload on one GPU, say) selection keeps
  // intercepts only; such a model answers one constant for every query,
  // which is the singular design wearing a disguise.
  bool any_feature = false;
  for (const auto& [op_class, m] : model->level1) any_feature |= !m.features.empty();
  for (const auto& [phase, m] : model->level2) any_feature |= !m.features.empty();
  if (!any_feature) {
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "fit: no feature varies over the ", selection->profiles.size(),
        " selected profiles (a singular design): every regression would predict a constant; "
        "profile more shapes, sizes or GPUs")));
  }
  absl::StatusOr<std::string> payload = predictor::SerializeModel(*model);
  if (!payload.ok()) return ToGrpcStatus(Prefixed("fit: ", payload.status()));
  const ModelInfo info = Summarize(*model);
  db::StoredModel stored;
  stored.name = name;
  stored.target = info.target;
  stored.summary = absl::StrCat(info.line, "; ", MethodNote(*selection));
  stored.cv_mape = info.cv_mape;
  stored.created_at_us = model->created_at_us;
  stored.payload = *std::move(payload);
  absl::StatusOr<db::StoredModel> saved = store_.SaveModel(stored);
  if (!saved.ok()) return ToGrpcStatus(saved.status());
  saved->payload.clear();
  ToProto(*saved, *model, response->mutable_model());

  auto loaded = std::make_shared<LoadedModel>();
  loaded->meta = *saved;
  loaded->model = *std::move(model);
  {
    absl::MutexLock lock(&mu_);
    ModelSlot& slot = models_[name];
    if (slot.loaded == nullptr || slot.loaded->meta.version < loaded->meta.version) {
      slot.loaded = std::move(loaded);
      slot.checked_at = absl::Now();
    }
  }
  logger_.Info("model fitted", {{"request_id", RequestIdOf(*context)},
                                {"model", name},
                                {"version", absl::StrCat(saved->version)},
                                {"profiles", absl::StrCat(selection->profiles.size())},
                                {"summary", stored.summary}});
  return grpc::Status::OK;
}

grpc::Status PredictorService::GetModel(grpc::ServerContext* context,
                                        const v1::GetModelRequest* request,
                                        v1::GetModelResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.GetModel"); !s.ok()) return s;
  absl::StatusOr<db::StoredModel> stored = request->id() != 0
                                               ? store_.GetModel(request->id())
                                               : store_.LatestModel(ModelName(request->name()));
  if (!stored.ok()) {
    if (stored.status().code() == absl::StatusCode::kNotFound && request->id() == 0) {
      return ToGrpcStatus(absl::NotFoundError(absl::StrCat(
          "no model named '", ModelName(request->name()), "': run perfcast fit first")));
    }
    return ToGrpcStatus(stored.status());
  }
  absl::StatusOr<predictor::PredictorModel> parsed = predictor::ParseModel(stored->payload);
  if (!parsed.ok()) {
    return ToGrpcStatus(absl::DataLossError(absl::StrCat(
        "stored model ", stored->id, " cannot be read: ", parsed.status().message())));
  }
  ToProto(*stored, *parsed, response->mutable_model());
  response->mutable_model()->set_detail_json(stored->payload);
  return grpc::Status::OK;
}

grpc::Status PredictorService::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest* request,
                                          v1::ListModelsResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.ListModels"); !s.ok()) return s;
  absl::StatusOr<std::vector<db::StoredModel>> models = store_.ListModels();
  if (!models.ok()) return ToGrpcStatus(models.status());
  for (const db::StoredModel& m : *models) ToProto(m, response->add_models());
  return grpc::Status::OK;
}

grpc::Status PredictorService::Evaluate(grpc::ServerContext* context,
                                        const v1::EvaluateRequest* request,
                                        v1::EvaluateResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.Evaluate"); !s.ok()) return s;
  const CallTimer timer(*context, max_call_);
  absl::StatusOr<predictor::FitOptions> fit = ToFitOptions(request->options());
  if (!fit.ok()) return ToGrpcStatus(fit.status());
  if (request->size_threshold() < 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("size_threshold must be >= 0"));
  }
  absl::StatusOr<Selection> selection = LoadSelection(store_, request->selection());
  if (!selection.ok()) return ToGrpcStatus(Prefixed("evaluate: ", selection.status()));
  if (grpc::Status s = timer.Check(); !s.ok()) return s;
  std::vector<predictor::DescribedProfile> profiles;
  profiles.reserve(selection->profiles.size());
  std::vector<int64_t> sizes;
  for (models::Profile& p : selection->profiles) {
    absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(p.workload);
    if (!d.ok()) {
      return ToGrpcStatus(Prefixed(absl::StrCat("evaluate: profile ", p.id, ": "), d.status()));
    }
    if (p.workload.kind == models::WorkloadKind::kModel) sizes.push_back(d->inner_modules);
    profiles.push_back({std::move(p), *std::move(d)});
  }

  predictor::EvaluateOptions options;
  options.fit = *fit;
  options.folds = fit->folds;
  options.seed = fit->seed;
  switch (request->split()) {
    case v1::SPLIT_K_FOLD: options.split = predictor::Split::kRandomKFold; break;
    case v1::SPLIT_LEAVE_ONE_GPU_OUT: options.split = predictor::Split::kLeaveOneGpuOut; break;
    case v1::SPLIT_HELD_OUT_LARGER_SIZES: {
      options.split = predictor::Split::kHeldOutSizes;
      if (sizes.empty()) {
        return ToGrpcStatus(absl::FailedPreconditionError(
            "evaluate: held-out sizes needs model profiles; the selection has none"));
      }
      options.size_threshold = request->size_threshold();
      if (options.size_threshold == 0) {
        std::nth_element(sizes.begin(), sizes.begin() + sizes.size() / 2, sizes.end());
        options.size_threshold = sizes[sizes.size() / 2];
      }
      break;
    }
    case v1::SPLIT_LARGEST_SIZE_PER_FAMILY:
      options.split = predictor::Split::kLargestSizePerFamily;
      if (sizes.empty()) {
        return ToGrpcStatus(absl::FailedPreconditionError(
            "evaluate: held-out sizes needs model profiles; the selection has none"));
      }
      break;
    default:
      return ToGrpcStatus(
          absl::InvalidArgumentError(absl::StrCat("split: unknown value ", request->split())));
  }
  absl::StatusOr<predictor::EvaluationReport> report =
      predictor::EvaluateDescribed(profiles, selection->nodes, options);
  if (!report.ok()) return ToGrpcStatus(report.status());
  if (grpc::Status s = timer.Check(); !s.ok()) return s;

  response->set_level1_mape(report->level1.overall.mape);
  response->set_level2_mape(report->level2.overall.mape);
  response->set_size_threshold(options.size_threshold);
  for (const predictor::LevelReport* level : {&report->level1, &report->level2}) {
    const int n = level == &report->level1 ? 1 : 2;
    AddGroups(level->by_gpu, n, response->mutable_per_gpu());
    AddGroups(level->by_family, n, response->mutable_per_family());
    AddGroups(level->by_precision, n, response->mutable_per_precision());
  }
  nlohmann::json points = nlohmann::json::array();
  for (const predictor::EvaluatedPoint& p : report->points) {
    v1::EvaluatedPoint* out = response->add_points();
    out->set_gpu_model(p.gpu);
    out->set_family(p.family);
    out->set_precision(p.precision);
    out->set_workload_key(profiles[p.profile_index].profile.workload.Key());
    out->set_measured_ms(p.measured_ms);
    out->set_predicted_ms(p.predicted_ms);
    out->set_predicted_ms_low(p.predicted_low_ms);
    out->set_predicted_ms_high(p.predicted_high_ms);
    out->set_level(p.level);
    points.push_back({{"level", p.level}, {"gpu", p.gpu}, {"family", p.family},
                      {"precision", p.precision}, {"workload", out->workload_key()},
                      {"measured_ms", p.measured_ms}, {"predicted_ms", p.predicted_ms}});
  }
  for (const std::string& note : report->notes) response->add_notes(note);
  response->add_notes(absl::StrCat("trained and evaluated on ", MethodNote(*selection)));

  // The model a fit on the whole selection gives: what the report's reader
  // would deploy, with its features and coefficients.
  nlohmann::json model_json = nullptr;
  absl::StatusOr<predictor::PredictorModel> full =
      predictor::FitDescribed(profiles, selection->nodes, *fit);
  if (grpc::Status s = timer.Check(); !s.ok()) return s;
  if (full.ok()) {
    for (const std::string& f : SelectedFeatures(*full)) response->add_selected_features(f);
    absl::StatusOr<std::string> text = predictor::SerializeModel(*full);
    if (text.ok()) model_json = nlohmann::json::parse(*text, nullptr, false);
  } else {
    response->add_notes(absl::StrCat("full fit: ", full.status().message()));
  }
  const char* split_names[] = {"kfold", "gpu", "sizes", "largest-size-per-family"};
  nlohmann::json json = {
      {"split", split_names[static_cast<int>(options.split)]},
      {"size_threshold", options.size_threshold},
      {"selection", DescribeSelection(request->selection())},
      {"profiles", profiles.size()},
      {"method_version", selection->method_version.has_value()
                             ? nlohmann::json(*selection->method_version)
                             : nlohmann::json(nullptr)},
      {"level1", ToJson(report->level1)},
      {"level2", ToJson(report->level2)},
      {"points", std::move(points)},
      {"notes", response->notes()},
      {"selected_features", response->selected_features()},
      {"model", std::move(model_json)},
  };
  response->set_report_json(json.dump());
  return grpc::Status::OK;
}

grpc::Status PredictorService::Recommend(grpc::ServerContext* context,
                                         const v1::RecommendRequest* request,
                                         v1::RecommendResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.Recommend"); !s.ok()) return s;
  absl::StatusOr<RecommendQuery> query = RecommendQueryFromRequest(*request);
  if (!query.ok()) return ToGrpcStatus(query.status());
  if (query->catalog_only && query->nodes_only) {
    return ToGrpcStatus(
        absl::InvalidArgumentError("catalog_only and nodes_only leave nothing to rank"));
  }
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded =
      LatestModel(ModelName(request->model_name()));
  if (!loaded.ok()) return ToGrpcStatus(loaded.status());
  std::vector<predictor::Target> targets;
  if (!query->nodes_only) {
    std::vector<std::string> names = query->catalog_gpus;
    if (names.empty()) {
      for (const models::GpuSpec& gpu : catalog_.gpus()) names.push_back(gpu.model);
    }
    std::set<std::string> seen;
    for (const std::string& name : names) {
      absl::StatusOr<models::GpuSpec> spec = catalog_.Find(name);
      if (!spec.ok()) return ToGrpcStatus(spec.status());
      if (!seen.insert(spec->model).second) continue;
      predictor::Target t;
      t.node.name = absl::StrCat("catalog:", spec->model);
      t.node.gpu = *std::move(spec);
      t.node.source = models::NodeSource::kCatalog;
      targets.push_back(std::move(t));
    }
  }
  if (!query->catalog_only) {
    std::vector<std::string> names = query->node_names;
    if (names.empty()) {
      if (absl::Status s = db::ForEachNode(
              store_, {}, [&](models::Node& node) { names.push_back(node.name); });
          !s.ok()) {
        return ToGrpcStatus(s);
      }
    }
    std::set<std::string> seen;
    for (const std::string& name : names) {
      if (!seen.insert(name).second) continue;
      absl::StatusOr<models::Node> node = RegisteredNode(name);
      if (!node.ok()) return ToGrpcStatus(node.status());
      // CPU nodes (no accelerator) are not candidates for a GPU job.
      if (node->gpu_count == 0) continue;
      targets.push_back({*std::move(node), true});
    }
  }
  const predictor::PredictorModel& model = (*loaded)->model;
  auto step = [&](const models::Node& node, int count) -> absl::StatusOr<predictor::Prediction> {
    if (count > 1) {
      return absl::UnimplementedError(
          "no multi-GPU step model: counts above 1 cannot be predicted yet");
    }
    absl::StatusOr<predictor::Prediction> p =
        predictor::PredictDescribed(model, query->workload, node);
    if (!p.ok()) return p.status();
    if (absl::Status finite = CheckFinite(*p); !finite.ok()) return finite;
    return p;
  };
  predictor::RecommendOptions options;
  options.iterations = query->iterations;
  options.deadline_seconds = query->deadline_seconds;
  options.budget_usd = query->budget_usd;
  options.gpu_counts = query->gpu_counts;
  options.rank_by = query->rank_by;
  const models::PriceTable prices = models::PriceTable::BuiltIn().Merged(query->prices);
  absl::StatusOr<std::vector<predictor::Recommendation>> ranked = predictor::Recommend(
      query->workload, targets, step, model.memory, model.power, prices, options);
  if (!ranked.ok()) return ToGrpcStatus(ranked.status());
  int rank = 0;
  for (const predictor::Recommendation& r : *ranked) {
    EncodeCandidate(r, ++rank, response->add_candidates());
  }
  response->set_iterations(query->iterations);
  response->set_workload_key(query->workload.spec.Key());
  response->set_model_id((*loaded)->meta.id);
  response->set_model_version((*loaded)->meta.version);
  response->set_rank_by(request->rank_by().empty() ? "cost" : request->rank_by());
  response->set_deadline_seconds(query->deadline_seconds);
  response->set_budget_usd(query->budget_usd);
  if (model.memory.empty()) {
    response->add_notes(
        "the model has no memory calibration (fitted before it existed, or no measured peaks): "
        "memory is the analytic estimate; refit to calibrate it");
  }
  if (model.power.empty()) {
    response->add_notes(
        "no profile measured board power: energy is spec TDP x a default utilisation");
  }
  return grpc::Status::OK;
}

}  // namespace perfcast::server

#include "server/predictor_service.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/arena.h"
#include "predictor/recommend.h"
#include "predictor/summary.h"
#include "proto/batch_results.h"
#include "server/call_timer.h"
#include "server/grpc_status.h"
#include "server/predict_response.h"
#include "server/request_validation.h"
#include "server/rpc_observer.h"
#include "serving/recommender.h"
#include "serving/training.h"

namespace perfcast::server {
namespace {

// A Predict request larger than this does not keep its memory in its
// thread's request message.
constexpr size_t kMaxKeptRequestBytes = 64 << 10;

// A PredictBatch message's arena: blocks grow to 1 MiB (a message of 10,000
// full results takes about 8 MB).
google::protobuf::ArenaOptions BatchArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 1 << 20;
  return options;
}

// The answer to `request`: its question decoded and asked once.
absl::StatusOr<serving::Answer> Ask(serving::Pricer& pricer, const v1::PredictRequest& request) {
  ASSIGN_OR_RETURN(serving::Query query, QueryFromRequest(request));
  return pricer.Ask(query);
}

void EncodeLayout(const predictor::ParallelLayout& layout, v1::ParallelLayout* out) {
  out->set_data_parallel(layout.data);
  out->set_tensor_parallel(layout.tensor);
  out->set_pipeline_parallel(layout.pipeline);
  out->set_micro_batches(layout.micro_batches);
  out->set_zero(layout.zero);
  out->set_activation_checkpointing(layout.activation_checkpointing);
  switch (layout.framework) {
    case predictor::Framework::kPytorch: out->set_framework(v1::FRAMEWORK_PYTORCH); break;
    case predictor::Framework::kMegatron: out->set_framework(v1::FRAMEWORK_MEGATRON); break;
    case predictor::Framework::kDeepspeed: out->set_framework(v1::FRAMEWORK_DEEPSPEED); break;
  }
}

void EncodeCandidate(const predictor::Recommendation& r, int rank, v1::Candidate* out) {
  out->set_rank(rank);
  out->set_target(r.target);
  out->set_gpu_model(r.gpu);
  out->set_registered_node(r.registered);
  out->set_gpu_count(r.gpu_count);
  EncodeLayout(r.layout, out->mutable_layout());
  out->set_layout_name(predictor::LayoutName(r.layout));
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
    out->set_method(std::string(predictor::MethodName(r.step.method, r.step.calibrated)));
    EncodeDistance(r.step.distance, out->mutable_distance());
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

void EncodeModel(const db::StoredModel& meta, v1::ModelSummary* out) {
  out->set_id(meta.id);
  out->set_name(meta.name);
  out->set_version(meta.version);
  out->set_target(meta.target);
  out->set_summary(meta.summary);
  out->set_cv_mape(meta.cv_mape);
  out->set_created_at_us(meta.created_at_us);
}

void EncodeModel(const db::StoredModel& meta, const predictor::PredictorModel& model,
                 v1::ModelSummary* out) {
  EncodeModel(meta, out);
  out->set_training_rows(predictor::Summarize(model).training_rows);
  for (const std::string& note : model.notes) out->add_notes(note);
}

void EncodeGroups(const std::map<std::string, predictor::ErrorSummary>& groups, int level,
                  google::protobuf::RepeatedPtrField<v1::GroupError>* out) {
  for (const auto& [group, summary] : groups) {
    v1::GroupError* g = out->Add();
    g->set_group(group);
    g->set_mape(summary.mape);
    g->set_rows(summary.count);
    g->set_level(level);
    g->set_bias(summary.median_bias);
    g->set_mean_bias(summary.bias);
    g->set_coverage(summary.coverage);
  }
}

// The deadline of a long call as the libraries' KeepGoing.
predictor::KeepGoing KeepGoing(const CallTimer& timer) {
  return [&timer]() -> absl::Status { return FromGrpcStatus(timer.Check()); };
}


serving::Pricer::Options PricingOptions(const PredictorServiceOptions& options) {
  serving::Pricer::Options pricing = options.pricing;
  pricing.keep_answers = options.answer_cache;
  return pricing;
}

}  // namespace

PredictorService::PredictorService(db::Store& store, const models::GpuCatalog& catalog,
                                   Logger& logger, const Authenticator& auth,
                                   PredictorServiceOptions options)
    : store_(store),
      catalog_(catalog),
      logger_(logger),
      auth_(auth),
      options_(options),
      pricer_(store, catalog, PricingOptions(options)) {}

PredictorService::~PredictorService() = default;

grpc::ServerUnaryReactor* PredictorService::Predict(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // One request and one response message per thread, their strings' memory
  // kept from call to call (a handler never waits, so no two calls share
  // them): a call allocates little to read and answer. A large request's
  // memory (a Hugging Face config's text) is let go after it.
  thread_local v1::PredictRequest parsed;
  thread_local v1::PredictResponse encoded;
  reactor->Finish([&]() -> grpc::Status {
    if (grpc::Status s = auth_.Check(*context, "Predictor.Predict"); !s.ok()) return s;
    grpc::ByteBuffer bytes(*request);  // gRPC's reader consumes what it reads
    if (grpc::Status s =
            grpc::SerializationTraits<v1::PredictRequest>::Deserialize(&bytes, &parsed);
        !s.ok()) {
      // gRPC's own reader calls this INTERNAL, a server fault; the fault is the client's.
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the request is not a PredictRequest: its bytes do not parse");
    }
    absl::StatusOr<serving::Answer> answer = Ask(pricer_, parsed);
    if (!answer.ok()) return ToGrpcStatus(answer.status());
    encoded.Clear();
    EncodeAnswer(*answer, /*brief=*/false, &encoded);
    bool own_buffer = false;
    return grpc::SerializationTraits<v1::PredictResponse>::Serialize(encoded, response,
                                                                    &own_buffer);
  }());
  if (request->Length() > kMaxKeptRequestBytes) v1::PredictRequest().Swap(&parsed);
  return reactor;
}

grpc::Status PredictorService::PredictBatch(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::PredictBatchResponse, v1::PredictBatchRequest>* stream) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.PredictBatch"); !s.ok()) return s;
  const CallTimer timer(*context, options_.max_call);
  int64_t rows = 0;
  while (true) {
    // Each message's request and response live on one arena: a full result
    // copies its answer's strings and sub-messages with a bump each, and
    // nothing is freed piecemeal.
    google::protobuf::Arena arena(BatchArenaOptions());
    auto& request = *google::protobuf::Arena::CreateMessage<v1::PredictBatchRequest>(&arena);
    if (!stream->Read(&request)) break;
    auto& response = *google::protobuf::Arena::CreateMessage<v1::PredictBatchResponse>(&arena);
    // Each distinct price of the message is encoded once; the compact layout
    // sends it once, keyed by its address (`encoded` keeps the prices alive).
    std::optional<proto::CompactResultsBuilder> compact;
    if (request.compact()) {
      compact.emplace(response.mutable_compact(), request.queries_size());
    } else {
      response.mutable_results()->Reserve(request.queries_size());
    }
    absl::flat_hash_map<std::shared_ptr<const serving::Price>, v1::PredictResponse> encoded;
    int row = 0;
    for (const v1::PredictRequest& query : request.queries()) {
      // One message may hold many queries. A check asks gRPC whether the call
      // was cancelled, which costs tens of microseconds: one per message and
      // one per 4096 queries.
      if (row++ % 4096 == 0) {
        if (grpc::Status s = timer.Check(); !s.ok()) return s;
      }
      absl::StatusOr<serving::Answer> answer = Ask(pricer_, query);
      if (!answer.ok()) {
        const absl::Status& status = answer.status();
        if (compact.has_value()) {
          compact->AddFailed(static_cast<int>(status.code()), BoundedMessage(status.message()));
        } else {
          v1::PredictResult* result = response.add_results();
          result->set_code(static_cast<int>(status.code()));
          result->set_error(BoundedMessage(status.message()));
        }
        continue;
      }
      auto [price, inserted] = encoded.try_emplace(answer->price);
      if (inserted) EncodePrice(*answer->price, request.brief(), &price->second);
      const predictor::JobEstimate& job = answer->job;
      if (compact.has_value()) {
        compact->AddAnswered(answer->price.get(), price->second, job.iterations, job.seconds,
                             job.lo_seconds, job.hi_seconds);
        continue;
      }
      v1::PredictResponse* prediction = response.add_results()->mutable_prediction();
      *prediction = price->second;
      EncodeJob(job, prediction);
    }
    rows += request.queries_size();
    if (!stream->Write(response)) break;
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
  const CallTimer timer(*context, options_.max_call);
  absl::StatusOr<predictor::FitOptions> options = ToFitOptions(request->options());
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<predictor::ProfileSelection> selection =
      SelectionFromRequest(request->selection());
  if (!selection.ok()) return ToGrpcStatus(selection.status());
  absl::StatusOr<serving::SavedFit> fitted = serving::FitAndSave(
      store_, request->model_name(), *selection, *options, KeepGoing(timer));
  if (!fitted.ok()) return ToGrpcStatus(fitted.status());
  const serving::LoadedModel& loaded = *fitted->loaded;
  EncodeModel(loaded.meta, loaded.model, response->mutable_model());
  pricer_.ModelSaved(fitted->loaded);
  logger_.Info("model fitted", {{"request_id", RequestIdOf(*context)},
                                {"model", loaded.meta.name},
                                {"version", absl::StrCat(loaded.meta.version)},
                                {"profiles", absl::StrCat(fitted->profiles)},
                                {"summary", loaded.meta.summary}});
  return grpc::Status::OK;
}

grpc::Status PredictorService::GetModel(grpc::ServerContext* context,
                                        const v1::GetModelRequest* request,
                                        v1::GetModelResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.GetModel"); !s.ok()) return s;
  const std::string name = serving::ModelName(request->name());
  absl::StatusOr<db::StoredModel> stored =
      request->id() != 0 ? store_.GetModel(request->id()) : store_.LatestModel(name);
  if (!stored.ok()) {
    if (stored.status().code() == absl::StatusCode::kNotFound && request->id() == 0) {
      return ToGrpcStatus(absl::NotFoundError(
          absl::StrCat("no model named '", name, "': run perfcast fit first")));
    }
    return ToGrpcStatus(stored.status());
  }
  std::string payload = stored->payload;
  absl::StatusOr<std::shared_ptr<const serving::LoadedModel>> loaded =
      serving::LoadModel(*std::move(stored));
  if (!loaded.ok()) return ToGrpcStatus(loaded.status());
  EncodeModel((*loaded)->meta, (*loaded)->model, response->mutable_model());
  response->mutable_model()->set_detail_json(std::move(payload));
  return grpc::Status::OK;
}

grpc::Status PredictorService::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest* request,
                                          v1::ListModelsResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.ListModels"); !s.ok()) return s;
  absl::StatusOr<std::vector<db::StoredModel>> models = store_.ListModels();
  if (!models.ok()) return ToGrpcStatus(models.status());
  for (const db::StoredModel& m : *models) EncodeModel(m, response->add_models());
  return grpc::Status::OK;
}

grpc::Status PredictorService::Evaluate(grpc::ServerContext* context,
                                        const v1::EvaluateRequest* request,
                                        v1::EvaluateResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.Evaluate"); !s.ok()) return s;
  const CallTimer timer(*context, options_.max_call);
  absl::StatusOr<predictor::EvaluateOptions> options = EvaluateOptionsFromRequest(*request);
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<predictor::ProfileSelection> selection =
      SelectionFromRequest(request->selection());
  if (!selection.ok()) return ToGrpcStatus(selection.status());
  absl::StatusOr<predictor::EvaluationResult> result =
      serving::EvaluateSelection(store_, *selection, *options, KeepGoing(timer));
  if (!result.ok()) return ToGrpcStatus(result.status());

  const predictor::EvaluationReport& report = result->report;
  response->set_level1_mape(report.level1.overall.mape);
  response->set_level2_mape(report.level2.overall.mape);
  response->set_level1_rows(report.level1.overall.count);
  response->set_level2_rows(report.level2.overall.count);
  response->set_level1_bias(report.level1.overall.median_bias);
  response->set_level1_mean_bias(report.level1.overall.bias);
  response->set_level1_coverage(report.level1.overall.coverage);
  response->set_level2_bias(report.level2.overall.median_bias);
  response->set_level2_mean_bias(report.level2.overall.bias);
  response->set_level2_coverage(report.level2.overall.coverage);
  response->set_size_threshold(result->size_threshold);
  for (const predictor::LevelReport* level : {&report.level1, &report.level2}) {
    const int n = level == &report.level1 ? 1 : 2;
    EncodeGroups(level->by_gpu, n, response->mutable_per_gpu());
    EncodeGroups(level->by_family, n, response->mutable_per_family());
    EncodeGroups(level->by_precision, n, response->mutable_per_precision());
    EncodeGroups(level->by_phase, n, response->mutable_per_phase());
    EncodeGroups(level->by_class, n, response->mutable_per_class());
  }
  if (options->split == predictor::Split::kTrainTestGpus) {
    for (const std::string& gpu : options->train_gpus) response->add_train_gpus(gpu);
    for (const std::string& gpu : options->test_gpus) response->add_test_gpus(gpu);
  }
  for (size_t i = 0; i < report.points.size(); ++i) {
    const predictor::EvaluatedPoint& p = report.points[i];
    v1::EvaluatedPoint* out = response->add_points();
    out->set_gpu_model(p.gpu);
    out->set_family(p.family);
    out->set_precision(p.precision);
    out->set_workload_key(result->workload_keys[i]);
    out->set_measured_ms(p.measured_ms);
    out->set_predicted_ms(p.predicted_ms);
    out->set_predicted_ms_low(p.lo_ms);
    out->set_predicted_ms_high(p.hi_ms);
    out->set_level(p.level);
    out->set_phase(p.phase);
    out->set_op_class(p.op_class);
    out->set_method(p.method);
  }
  for (const std::string& note : result->notes) response->add_notes(note);
  for (const std::string& f : result->selected_features) response->add_selected_features(f);
  response->set_report_json(std::move(result->report_json));
  return grpc::Status::OK;
}

grpc::Status PredictorService::Recommend(grpc::ServerContext* context,
                                         const v1::RecommendRequest* request,
                                         v1::RecommendResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.Recommend"); !s.ok()) return s;
  absl::StatusOr<RecommendQuery> checked = RecommendQueryFromRequest(*request);
  if (!checked.ok()) return ToGrpcStatus(checked.status());
  serving::RecommendQuery query;
  query.workload = checked->workload;
  query.job.iterations = checked->iterations;
  query.catalog_gpus = checked->catalog_gpus;
  query.node_names = checked->node_names;
  query.catalog_only = checked->catalog_only;
  query.nodes_only = checked->nodes_only;
  query.prices = checked->prices;
  query.deadline_seconds = checked->deadline_seconds;
  query.budget_usd = checked->budget_usd;
  query.gpu_counts = checked->gpu_counts;
  query.framework = checked->framework;
  query.all_layouts = checked->all_layouts;
  query.rank_by = checked->rank_by;
  query.model_name = request->model_name();
  query.loop = checked->loop;
  absl::StatusOr<serving::RecommendAnswer> answer =
      serving::Recommend(pricer_, store_, catalog_, query);
  if (!answer.ok()) return ToGrpcStatus(answer.status());
  int rank = 0;
  for (const predictor::Recommendation& r : answer->ranked) {
    EncodeCandidate(r, ++rank, response->add_candidates());
  }
  response->set_iterations(answer->iterations);
  response->set_workload_key(query.workload.spec.Key());
  response->set_model_id(answer->model->meta.id);
  response->set_model_version(answer->model->meta.version);
  response->set_rank_by(request->rank_by().empty() ? "cost" : request->rank_by());
  response->set_deadline_seconds(query.deadline_seconds);
  response->set_budget_usd(query.budget_usd);
  for (const std::string& note : answer->notes) response->add_notes(note);
  return grpc::Status::OK;
}

}  // namespace perfcast::server

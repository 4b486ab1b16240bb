#include "server/predictor_service.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/arena.h"
#include "predictor/summary.h"
#include "serving/training.h"
#include "predictor/parallel.h"
#include "models/gpu_prices.h"
#include "models/model_source.h"
#include "predictor/recommend.h"
#include "serving/recommender.h"
#include "proto/batch_results.h"
#include "proto/convert.h"
#include "proto/wire_split.h"
#include "server/call_timer.h"
#include "server/grpc_status.h"
#include "server/predict_response.h"
#include "server/request_validation.h"
#include "server/rpc_observer.h"

namespace perfcast::server {
namespace {

// Answers kept server-wide, and per PredictBatch stream.
constexpr size_t kMaxAnswers = 10'000;
constexpr size_t kMaxStreamAnswers = 100'000;
// A Predict request larger than this (a Hugging Face config's text) does
// not keep its memory in its thread's request message.
constexpr size_t kMaxKeptRequestBytes = 64 << 10;
// Described workloads kept server-wide (a large model's descriptor holds a
// few hundred operations: tens of kB).
constexpr size_t kMaxDescriptors = 2'000;

// A PredictBatch message's arena: blocks grow to 1 MiB (a message of 10,000
// full results takes about 8 MB).
google::protobuf::ArenaOptions BatchArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 1 << 20;
  return options;
}

// Parses a request's bytes as gRPC would: INTERNAL when they do not parse.
// Bytes in one uncompressed slice (any small request) are read in place,
// around their workload where they allow (proto::ParseAroundField): its
// bytes are then in `workload`, which points into `bytes`, and `request`
// lacks it. Parsing the workload's parameter map was most of a parse.
grpc::Status ParseRequest(const grpc::ByteBuffer& bytes, v1::PredictRequest* request,
                          std::optional<absl::string_view>* workload) {
  workload->reset();
  grpc::Slice slice;
  if (!bytes.TrySingleSlice(&slice).ok()) {
    grpc::ByteBuffer copy(bytes);  // gRPC's reader consumes what it reads
    return grpc::SerializationTraits<v1::PredictRequest>::Deserialize(&copy, request);
  }
  const absl::string_view data(reinterpret_cast<const char*>(slice.begin()), slice.size());
  if (proto::ParseAroundField(data, v1::PredictRequest::kWorkloadFieldNumber, request,
                              workload)) {
    return grpc::Status::OK;
  }
  workload->reset();
  if (!request->ParseFromArray(slice.begin(), static_cast<int>(slice.size()))) {
    return grpc::Status(grpc::StatusCode::INTERNAL, request->InitializationErrorString());
  }
  return grpc::Status::OK;
}

// Appends `text` so that no two strings append the same bytes.
void AppendString(absl::string_view text, std::string* out) {
  absl::StrAppend(out, text.size(), ":", text);
}

// Appends a key of every field of `w`, its parameters in name order: equal
// content, equal key. What proto::AppendDeterministic gives, at a fraction of its cost
// (a batch keys every query): kWorkloadFields guards that a field added to
// Workload is added here too.
constexpr int kWorkloadFields = 9;
void AppendWorkloadKey(const v1::Workload& w, std::string* key) {
  absl::StrAppend(key, static_cast<int>(w.kind()), ",", w.batch_size(), ",",
                  static_cast<int>(w.precision()), ",", static_cast<int>(w.phase()), ",");
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

// Identifies what a query asks, job size aside: equal bytes, equal question.
void AnswerKey(const v1::PredictRequest& query, bool brief, std::string* key) {
  key->clear();
  absl::StrAppend(key, static_cast<int>(query.target_case()), brief ? "b" : "f");
  AppendString(query.model_name(), key);
  AppendString(query.node_name(), key);
  AppendString(query.catalog_gpu(), key);
  // An absent workload and an empty one are different mistakes.
  if (query.has_workload()) {
    key->push_back('w');
    AppendWorkloadKey(query.workload(), key);
  }
  key->push_back('|');
  if (query.has_parallel()) proto::AppendDeterministic(query.parallel(), key);
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
    out->set_method(std::string(predictor::MethodName(r.step.method, r.step.calibrated)));
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

// `bytes` as the call's reply.
void SetBytes(const std::string& bytes, grpc::ByteBuffer* out) {
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer buffer(&slice, 1);
  out->Swap(&buffer);
}

// The job `request` asks for, priced on `price` (a serving::WorkloadPrice
// or PlannedPrice): its job's errors first, then the pricing's.
template <typename Price>
absl::StatusOr<predictor::JobEstimate> JobEstimateFor(const v1::PredictRequest& request,
                                                      const Price& price) {
  absl::StatusOr<predictor::JobSize> job = JobFromRequest(request);
  if (!job.ok()) return job.status();
  return serving::PriceJob(price, *job);
}

// PredictResponse.notes of a described workload (DescribedWorkload::notes).
void AddNotes(const std::vector<std::string>& notes, v1::PredictResponse* out) {
  for (const std::string& note : notes) out->add_notes(note);
}

// The deadline of a long call as the libraries' KeepGoing.
predictor::KeepGoing KeepGoing(const CallTimer& timer) {
  return [&timer]() -> absl::Status {
    grpc::Status s = timer.Check();
    if (s.ok()) return absl::OkStatus();
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  };
}

}  // namespace

// The job-independent part of an answer, priced and encoded once.
struct PredictorService::Answer {
  absl::Status status;
  serving::WorkloadPrice price;
  v1::PredictResponse encoded;  // empty where `bytes` holds it instead
  AnswerBytes bytes;            // Predict's answers: `encoded` around the job
};

PredictorService::PredictorService(db::Store& store, const models::GpuCatalog& catalog,
                                   Logger& logger, const Authenticator& auth,
                                   PredictorServiceOptions options)
    : store_(store),
      catalog_(catalog),
      logger_(logger),
      auth_(auth),
      options_(options),
      pricer_(store, catalog, options.pricing),
      answers_(options.answer_cache
                   ? std::make_unique<AnswerCache>(kMaxAnswers, options.pricing.node_recheck)
                   : nullptr),
      descriptors_(kMaxDescriptors, absl::InfiniteDuration()) {
  // A field added to Workload must join AppendWorkloadKey, or two questions
  // that differ in it would share an answer.
  if (v1::Workload::descriptor()->field_count() != kWorkloadFields) std::abort();
}

PredictorService::~PredictorService() = default;

std::shared_ptr<const PredictorService::DescribedWorkload> PredictorService::Described(
    const v1::PredictRequest& query) {
  // A descriptor is a function of the workload's fields alone (the model
  // zoo is code): an entry never goes stale.
  if (!query.has_workload()) {
    return std::make_shared<const DescribedWorkload>(
        DescribedWorkload{DescribeWorkload(query)});
  }
  thread_local std::string key;
  key.clear();
  AppendWorkloadKey(query.workload(), &key);
  if (auto hit = descriptors_.Find(key, /*model_id=*/0)) return hit;
  auto described = std::make_shared<DescribedWorkload>();
  described->descriptor = DescribeWorkload(query);
  if (described->descriptor.ok()) {
    const models::WorkloadSpec& spec = described->descriptor->spec;
    described->prepared.emplace(*described->descriptor);
    described->echo = EncodeWorkloadEcho(spec);
    const v1::Workload& w = query.workload();
    if (!w.torchvision().empty() || !w.hf_config_json().empty()) {
      described->notes = models::ImplementationCaveats(
          w.torchvision().empty() ? models::ModelOrigin::kHuggingFace
                                  : models::ModelOrigin::kTorchvision,
          spec.family,
          spec.precision == models::Precision::kBf16Amp ||
              spec.precision == models::Precision::kFp16Amp,
          spec.phase == models::Phase::kTrain);
    }
  }
  descriptors_.Put(key, /*model_id=*/0, described);
  return described;
}

std::shared_ptr<const PredictorService::DescribedWorkload> PredictorService::DescribedByBytes(
    absl::string_view workload) {
  // 'b' and the bytes: no key of Described's starts with a letter.
  thread_local std::string key;
  key.clear();
  absl::StrAppend(&key, "b", workload);
  if (auto hit = descriptors_.Find(key, /*model_id=*/0)) return hit;
  v1::PredictRequest query;
  if (!query.mutable_workload()->ParseFromArray(workload.data(),
                                                 static_cast<int>(workload.size()))) {
    return nullptr;
  }
  std::shared_ptr<const DescribedWorkload> described = Described(query);
  descriptors_.Put(key, /*model_id=*/0, described);
  return described;
}

absl::StatusOr<PredictorService::Question> PredictorService::Ask(
    const v1::PredictRequest& query,
    const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model,
    std::shared_ptr<const DescribedWorkload> described) {
  // Problems of the request come before the server's (no model yet).
  absl::StatusOr<serving::Target> target = TargetFromRequest(query);
  if (!target.ok()) return target.status();
  absl::StatusOr<std::shared_ptr<const models::Node>> node = pricer_.ResolveTarget(*target);
  if (!node.ok()) return node.status();
  if (described == nullptr) described = Described(query);
  if (!described->descriptor.ok()) return described->descriptor.status();
  if (!model.ok()) return model.status();
  return Question{*std::move(target), *std::move(node), std::move(described)};
}

absl::StatusOr<serving::WorkloadPrice> PredictorService::PriceQuery(
    const v1::PredictRequest& query,
    const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model,
    std::shared_ptr<const DescribedWorkload>* described) {
  absl::StatusOr<Question> question = Ask(query, model);
  if (!question.ok()) return question.status();
  if (described != nullptr) *described = question->described;
  // The price shares the cached descriptor instead of copying its spec.
  std::optional<predictor::ParallelLayout> layout = LayoutFromRequest(query);
  if (layout.has_value()) {
    return pricer_.Price(*model, question->descriptor(), question->target, layout);
  }
  // On one GPU: the node Ask resolved and the workload prepared once, as
  // Pricer::Price would do them again.
  absl::StatusOr<serving::PlannedPrice> planned = pricer_.PricePlanned(
      *model, question->descriptor(), question->node, *question->described->prepared);
  if (!planned.ok()) return planned.status();
  return planned->ToWorkloadPrice();
}

std::shared_ptr<const PredictorService::Answer> PredictorService::AnswerFor(
    const v1::PredictRequest& query, bool brief,
    const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model, AnswerCache& cache,
    bool cache_errors, bool as_bytes) {
  thread_local std::string key;
  if (model.ok()) {
    AnswerKey(query, brief, &key);
    if (std::shared_ptr<const Answer> hit = cache.Find(key, (*model)->meta.id)) return hit;
  }
  auto answer = std::make_shared<Answer>();
  std::shared_ptr<const DescribedWorkload> described;
  absl::StatusOr<serving::WorkloadPrice> price = PriceQuery(query, model, &described);
  answer->status = price.status();
  if (price.ok()) {
    answer->price = *std::move(price);
    // Bytes are encoded from a message of their own: a cleared `encoded`
    // would keep its strings' memory in the cache.
    v1::PredictResponse for_bytes;
    v1::PredictResponse& encoded = as_bytes ? for_bytes : answer->encoded;
    EncodeAnswer(answer->price, brief, &encoded);
    if (!brief) AddNotes(described->notes, &encoded);
    if (as_bytes) answer->bytes = SplitAroundJob(encoded);
    // Encoded, the answer needs only its numbers (PriceJob). Holding the
    // described workload would pin it past the descriptor cache's bound: one
    // per cached answer, 10,000 of them where the 2,000 cached descriptors
    // were meant to be all.
    answer->price.workload.reset();
  }
  if (model.ok() && (answer->status.ok() || cache_errors)) {
    cache.Put(key, (*model)->meta.id, answer);
  }
  return answer;
}

absl::Status PredictorService::PredictOne(v1::PredictRequest& request,
                                          const std::optional<absl::string_view>& workload,
                                          grpc::ByteBuffer* out) {
  // The workload first, whichever way it is read: bytes that do not parse
  // are a request that does not parse. A one-GPU answer priced afresh
  // describes it by its bytes; the cached answers' keys and layouts read
  // its fields.
  const bool priced_afresh = answers_ == nullptr && !LayoutFromRequest(request).has_value();
  std::shared_ptr<const DescribedWorkload> described;
  if (workload.has_value()) {
    bool parsed = false;
    if (priced_afresh) {
      described = DescribedByBytes(*workload);
      parsed = described != nullptr;
    } else {
      parsed = request.mutable_workload()->ParseFromArray(workload->data(),
                                                          static_cast<int>(workload->size()));
    }
    if (!parsed) return absl::InternalError("the request's workload does not parse");
  }
  absl::StatusOr<std::shared_ptr<const serving::LoadedModel>> model =
      pricer_.Model(request.model_name());
  if (priced_afresh) {
    // Priced afresh on one GPU: the answer's bytes written straight from
    // the price, whose labels stay in the pricing plan.
    absl::StatusOr<Question> question = Ask(request, model, std::move(described));
    if (!question.ok()) return question.status();
    serving::PlannedPrice price;
    if (absl::Status s = pricer_.PricePlanned(*model, question->descriptor(), question->node,
                                              *question->described->prepared, &price);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<predictor::JobEstimate> estimate = JobEstimateFor(request, price);
    if (!estimate.ok()) return estimate.status();
    thread_local std::string bytes;
    bytes.clear();
    AppendPredictResponse(price, question->described->echo, *estimate, &bytes);
    AppendPredictNotes(question->described->notes, &bytes);
    SetBytes(bytes, out);
    return absl::OkStatus();
  }
  if (answers_ != nullptr) {
    // Priced once per question and model; each call writes its job's
    // fields between the cached answer's bytes.
    std::shared_ptr<const Answer> cached = AnswerFor(request, /*brief=*/false, model, *answers_,
                                                     /*cache_errors=*/false, /*as_bytes=*/true);
    if (!cached->status.ok()) return cached->status;
    absl::StatusOr<predictor::JobEstimate> estimate = JobEstimateFor(request, cached->price);
    if (!estimate.ok()) return estimate.status();
    thread_local std::string bytes;
    bytes.clear();
    AppendAnswer(cached->bytes, *estimate, &bytes);
    SetBytes(bytes, out);
    return absl::OkStatus();
  }
  // A layout priced afresh: encoded as a message.
  absl::StatusOr<serving::WorkloadPrice> priced = PriceQuery(request, model, &described);
  if (!priced.ok()) return priced.status();
  absl::StatusOr<predictor::JobEstimate> estimate = JobEstimateFor(request, *priced);
  if (!estimate.ok()) return estimate.status();
  v1::PredictResponse response;
  EncodeAnswer(*std::move(priced), /*brief=*/false, &response);
  AddNotes(described->notes, &response);
  EncodeJob(*estimate, &response);
  bool own_buffer = false;
  grpc::Status serialized =
      grpc::SerializationTraits<v1::PredictResponse>::Serialize(response, out, &own_buffer);
  if (!serialized.ok()) {
    return absl::InternalError(absl::StrCat("Predict: ", serialized.error_message()));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* PredictorService::Predict(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status s = auth_.Check(*context, "Predictor.Predict"); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  // One request message per thread, its strings' memory kept from call to
  // call (a handler never waits, so no call shares it): a call allocates
  // nothing to read its request. A large one's memory is let go after it.
  thread_local v1::PredictRequest parsed;
  std::optional<absl::string_view> workload;
  grpc::Status status = ParseRequest(*request, &parsed, &workload);
  if (status.ok()) status = ToGrpcStatus(PredictOne(parsed, workload, response));
  if (request->Length() > kMaxKeptRequestBytes) v1::PredictRequest().Swap(&parsed);
  reactor->Finish(status);
  return reactor;
}

grpc::Status PredictorService::PredictBatch(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::PredictBatchResponse, v1::PredictBatchRequest>* stream) {
  if (grpc::Status s = auth_.Check(*context, "Predictor.PredictBatch"); !s.ok()) return s;
  const CallTimer timer(*context, options_.max_call);
  // A stream prices each distinct question once, whatever the job sizes.
  AnswerCache answers(kMaxStreamAnswers, absl::InfiniteDuration());
  // Looked up once per message, so that a refit between messages of a long
  // stream takes effect.
  absl::flat_hash_map<std::string, absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>>
      models;
  int64_t rows = 0;
  while (true) {
    // Each message's request and response live on one arena: a full result
    // copies its answer's strings and sub-messages with a bump each, and
    // nothing is freed piecemeal.
    google::protobuf::Arena arena(BatchArenaOptions());
    auto& request = *google::protobuf::Arena::CreateMessage<v1::PredictBatchRequest>(&arena);
    if (!stream->Read(&request)) break;
    auto& response = *google::protobuf::Arena::CreateMessage<v1::PredictBatchResponse>(&arena);
    // The compact layout sends each distinct answer of the message once;
    // `held` keeps those answers (their addresses are the builder's keys)
    // alive while the message is built.
    std::optional<proto::CompactResultsBuilder> compact;
    std::vector<std::shared_ptr<const Answer>> held;
    if (request.compact()) {
      compact.emplace(response.mutable_compact(), request.queries_size());
    } else {
      response.mutable_results()->Reserve(request.queries_size());
    }
    models.clear();
    int row = 0;
    for (const v1::PredictRequest& query : request.queries()) {
      // One message may hold many queries. A check asks gRPC whether the call
      // was cancelled, which costs tens of microseconds: one per message and
      // one per 4096 queries.
      if (row++ % 4096 == 0) {
        if (grpc::Status s = timer.Check(); !s.ok()) return s;
      }
      auto model = models.find(query.model_name());
      if (model == models.end()) {
        model = models.emplace(query.model_name(), pricer_.Model(query.model_name())).first;
      }
      std::shared_ptr<const Answer> answer =
          AnswerFor(query, request.brief(), model->second, answers, /*cache_errors=*/true,
                    /*as_bytes=*/false);
      absl::Status status = answer->status;
      absl::StatusOr<predictor::JobEstimate> estimate;
      if (status.ok()) {
        estimate = JobEstimateFor(query, answer->price);
        status = estimate.status();
      }
      if (compact.has_value()) {
        if (!status.ok()) {
          compact->AddFailed(static_cast<int>(status.code()), BoundedMessage(status.message()));
          continue;
        }
        if (compact->AddAnswered(answer.get(), answer->encoded, estimate->iterations,
                                 estimate->seconds, estimate->lo_seconds,
                                 estimate->hi_seconds)) {
          held.push_back(answer);
        }
        continue;
      }
      v1::PredictResult* result = response.add_results();
      if (!status.ok()) {
        result->set_code(static_cast<int>(status.code()));
        result->set_error(BoundedMessage(status.message()));
        continue;
      }
      v1::PredictResponse* prediction = result->mutable_prediction();
      *prediction = answer->encoded;
      EncodeJob(*estimate, prediction);
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
  query.rank_by = checked->rank_by;
  query.model_name = request->model_name();
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

// perfcast.v1.Predictor: decodes each request, calls serving/ (the Pricer
// for predictions, FitAndSave and EvaluateSelection for models) and encodes
// the reply. What a prediction costs and how it is cached is serving/'s
// business; this file only translates.
//
// Thread-safe: gRPC calls the methods concurrently.
#ifndef PERFCAST_SERVER_PREDICTOR_SERVICE_H_
#define PERFCAST_SERVER_PREDICTOR_SERVICE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "serving/answer_cache.h"
#include "serving/pricer.h"
#include "server/authenticator.h"
#include "server/logger.h"

namespace perfcast::server {

struct PredictorServiceOptions {
  // PredictBatch, Fit and Evaluate stop with DEADLINE_EXCEEDED after this
  // (see CallTimer); Fit then saves no model.
  absl::Duration max_call = absl::InfiniteDuration();
  // Predict answers a question asked again within a second from memory
  // (serving::AnswerCache); off, every Predict is priced afresh.
  bool answer_cache = true;
  serving::Pricer::Options pricing;
};

// Predict runs on gRPC's callback API: it never blocks for long (a store read
// only on a cache miss), and the synchronous pool's hand-off between polling
// and worker threads cost more than the whole answer (see predict_bench).
// It takes and answers bytes (a raw method): a one-GPU answer priced afresh
// is written as the PredictResponse's wire bytes (AppendPredictResponse),
// without building the message; what clients receive is the same message.
// The other RPCs stay synchronous: they read many rows or fit models.
class PredictorService final
    : public v1::Predictor::WithRawCallbackMethod_Predict<v1::Predictor::Service> {
 public:
  // `store`, `catalog`, `logger` and `auth` must outlive the service.
  PredictorService(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
                   const Authenticator& auth, PredictorServiceOptions options = {});
  ~PredictorService() override;

  // NOT_FOUND: unknown node or catalog GPU, no model of that name.
  // INVALID_ARGUMENT: missing or invalid workload fields (the message names
  // the field), no target, job size missing or <= 0. OUT_OF_RANGE: a job of
  // more than 2^53 iterations. FAILED_PRECONDITION: the model cannot price
  // this workload, or would answer a non-finite time.
  // `request` and `response` are a PredictRequest's and a PredictResponse's
  // bytes; INTERNAL when the request's do not parse, as gRPC answers.
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  // One response per request message, one result per query in order; each
  // result carries the code Predict would have returned.
  grpc::Status PredictBatch(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::PredictBatchResponse, v1::PredictBatchRequest>* stream) override;
  // FAILED_PRECONDITION: no profiles match the selection, or no model could
  // be fitted (too few rows for the folds, singular designs; the message says
  // which). INVALID_ARGUMENT: bad options, undescribable stored workloads.
  grpc::Status Fit(grpc::ServerContext* context, const v1::FitRequest* request,
                   v1::FitResponse* response) override;
  // NOT_FOUND when absent; the summary carries the serialised model.
  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest* request,
                        v1::GetModelResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;
  // Errors as Fit; FAILED_PRECONDITION when nothing held out could be predicted.
  grpc::Status Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                        v1::EvaluateResponse* response) override;
  // INVALID_ARGUMENT: workload, job, counts, prices, deadline or budget;
  // NOT_FOUND: no model, or a named catalog GPU or node that does not exist.
  grpc::Status Recommend(grpc::ServerContext* context, const v1::RecommendRequest* request,
                         v1::RecommendResponse* response) override;

 private:
  struct Answer;
  using AnswerCache = serving::AnswerCache<Answer>;
  // A workload as described once: its descriptor (or why it has none),
  // for an answer written as bytes its echo (EncodeWorkloadEcho), and the
  // notes on the user's own implementation (PredictResponse.notes), all
  // functions of the workload's fields alone.
  struct DescribedWorkload {
    absl::StatusOr<models::WorkloadDescriptor> descriptor;
    // The descriptor prepared for pricing (set where it is ok), so that a
    // price reads its operations' work instead of working it out again. It
    // points into `descriptor`: set in place, never moved with it.
    std::optional<predictor::PreparedWorkload> prepared;
    std::string echo;
    std::vector<std::string> notes;
  };
  using DescriptorCache = serving::AnswerCache<DescribedWorkload>;
  // What a query asks, its problems found in the order of PriceQuery's
  // errors, up to the pricing itself.
  struct Question {
    serving::Target target;
    std::shared_ptr<const models::Node> node;  // the target resolved
    std::shared_ptr<const DescribedWorkload> described;  // descriptor ok
    // The descriptor, sharing `described`.
    std::shared_ptr<const models::WorkloadDescriptor> descriptor() const {
      return {described, &*described->descriptor};
    }
  };

  // The descriptor of `query`'s workload (or why it has none), described
  // once per distinct workload.
  std::shared_ptr<const DescribedWorkload> Described(const v1::PredictRequest& query);
  // The same for a workload given as its serialised bytes (a Predict's,
  // proto::ParseAroundField), kept by those bytes: a workload asked again
  // costs a lookup instead of a parse. Null when the bytes do not parse.
  std::shared_ptr<const DescribedWorkload> DescribedByBytes(absl::string_view workload);
  // `described`, when not null, is `query`'s workload described already
  // (DescribedByBytes); `query` then need not hold it.
  absl::StatusOr<Question> Ask(
      const v1::PredictRequest& query,
      const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model,
      std::shared_ptr<const DescribedWorkload> described = nullptr);
  // Prices `query` with `model`: the one path of Predict and PredictBatch
  // (Predict's one-GPU answers take Pricer::PricePlanned, Price's own path
  // for them). `described`, when not null, receives the priced query's
  // described workload (its notes), so that callers need not look it up
  // again.
  absl::StatusOr<serving::WorkloadPrice> PriceQuery(
      const v1::PredictRequest& query,
      const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model,
      std::shared_ptr<const DescribedWorkload>* described = nullptr);
  // The job-independent answer to `query` with `model`: from `cache` when it
  // holds one for this model, else priced and encoded (full or brief) and
  // put there; errors are cached only when `cache_errors`. `as_bytes`
  // keeps the encoding as bytes around the job (Answer::bytes, Predict's)
  // instead of as a message (PredictBatch's).
  std::shared_ptr<const Answer> AnswerFor(
      const v1::PredictRequest& query, bool brief,
      const absl::StatusOr<std::shared_ptr<const serving::LoadedModel>>& model,
      AnswerCache& cache, bool cache_errors, bool as_bytes);
  // Predict's whole work: its answer's bytes in `out`. `workload`, when
  // set, is the request's workload as its bytes, which `request` then lacks
  // (ParseAroundField).
  absl::Status PredictOne(v1::PredictRequest& request,
                          const std::optional<absl::string_view>& workload,
                          grpc::ByteBuffer* out);

  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  const Authenticator& auth_;
  const PredictorServiceOptions options_;
  serving::Pricer pricer_;
  std::unique_ptr<AnswerCache> answers_;  // null when options.answer_cache is off
  DescriptorCache descriptors_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PREDICTOR_SERVICE_H_

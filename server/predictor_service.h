// perfcast.v1.Predictor: decodes each request, calls serving/ (Pricer::Ask
// for predictions, FitAndSave and EvaluateSelection for models) and encodes
// the reply. What a prediction costs and how it is cached is serving/'s
// business; this file only translates.
//
// Thread-safe: gRPC calls the methods concurrently.
#ifndef PERFCAST_SERVER_PREDICTOR_SERVICE_H_
#define PERFCAST_SERVER_PREDICTOR_SERVICE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "serving/pricer.h"
#include "server/authenticator.h"
#include "server/logger.h"

namespace perfcast::server {

struct PredictorServiceOptions {
  // PredictBatch, Fit and Evaluate stop with DEADLINE_EXCEEDED after this
  // (see CallTimer); Fit then saves no model.
  absl::Duration max_call = absl::InfiniteDuration();
  // Predict answers a question asked again within a second from memory
  // (serving::Pricer::Options::keep_answers); off, every Predict is priced
  // afresh.
  bool answer_cache = true;
  serving::Pricer::Options pricing;
};

// Predict runs on gRPC's callback API: it never blocks for long (a store read
// only on a cache miss), and the synchronous pool's hand-off between polling
// and worker threads costs more than the whole answer. It takes the raw
// method's bytes and parses them itself, so that bytes that are no
// PredictRequest get INTERNAL, as every other method answers them (the
// typed callback method answers UNIMPLEMENTED). The other RPCs stay
// synchronous: they read many rows or fit models.
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
  // bytes.
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
  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  const Authenticator& auth_;
  const PredictorServiceOptions options_;
  serving::Pricer pricer_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PREDICTOR_SERVICE_H_

// perfcast.v1.Predictor over a Store: selects profiles and nodes, calls
// predictor/ to fit, predict and evaluate, and keeps fitted models versioned
// in the store.
//
// Predict must cost little more than the RPC itself, so the service keeps
// the parsed latest model of each name in memory (replaced at once by a Fit
// through this server; for fits by other servers sharing the store, checked
// at most every kModelRecheck) and registered nodes for kNodeRecheck.
// PredictBatch additionally reuses, within one stream, each distinct
// (model, target, workload) prediction, so a batch that prices the same
// workloads for many job sizes describes each workload once.
//
// Thread-safe: gRPC calls the methods concurrently.
#ifndef PERFCAST_SERVER_PREDICTOR_SERVICE_H_
#define PERFCAST_SERVER_PREDICTOR_SERVICE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "predictor/model.h"
#include "predictor/predictor.h"
#include "server/authenticator.h"
#include "server/logger.h"

namespace perfcast::server {

// Predict runs on gRPC's callback API: it never blocks for long (a store read
// only on a cache miss), and the synchronous pool's hand-off between polling
// and worker threads cost more than the whole answer (see predict_bench).
// The other RPCs stay synchronous: they read many rows or fit models.
class PredictorService final
    : public v1::Predictor::WithCallbackMethod_Predict<v1::Predictor::Service> {
 public:
  // How stale a cached model or node may get when another process writes
  // the store; this server's own fits are visible at once.
  static constexpr absl::Duration kModelRecheck = absl::Seconds(1);
  static constexpr absl::Duration kNodeRecheck = absl::Seconds(1);

  // `store`, `catalog`, `logger` and `auth` must outlive the service.
  // PredictBatch, Fit and Evaluate stop with DEADLINE_EXCEEDED after
  // `max_call` (see CallTimer); Fit then saves no model.
  PredictorService(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
                   const Authenticator& auth, absl::Duration max_call = absl::InfiniteDuration())
      : store_(store), catalog_(catalog), logger_(logger), auth_(auth), max_call_(max_call) {}

  // NOT_FOUND: unknown node or catalog GPU, no model of that name.
  // INVALID_ARGUMENT: missing or invalid workload fields (the message names
  // the field), no target, job size missing or <= 0.
  // FAILED_PRECONDITION: the model cannot price this workload, or would
  // answer a non-finite time.
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
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

  // A stored model with its parsed payload; immutable once built.
  struct LoadedModel {
    db::StoredModel meta;  // payload cleared
    predictor::PredictorModel model;
  };

 private:
  struct ModelSlot {
    std::shared_ptr<const LoadedModel> loaded;
    absl::Time checked_at = absl::InfinitePast();
  };
  struct NodeSlot {
    absl::StatusOr<models::Node> node;
    absl::Time fetched_at = absl::InfinitePast();
  };
  // A successful answer without its job part, reused by Predict for the same
  // (model version, target, workload) for kNodeRecheck: as long as the node
  // it was computed for may be cached anyway.
  struct Answer {
    int64_t model_id = 0;
    absl::Time at;
    int64_t batch_size = 0;
    predictor::Prediction prediction;
    v1::PredictResponse encoded;
  };
  static constexpr size_t kMaxAnswers = 10'000;

  grpc::Status PredictOne(const v1::PredictRequest& request, v1::PredictResponse* response);

  // The latest version of model `name`. NotFound when none was fitted.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> LatestModel(const std::string& name);
  // The node a request targets: a registered node by name or a catalog GPU.
  absl::StatusOr<models::Node> TargetNode(const v1::PredictRequest& request);
  absl::StatusOr<models::Node> RegisteredNode(const std::string& name);

  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  const Authenticator& auth_;
  const absl::Duration max_call_;

  absl::Mutex mu_;
  std::map<std::string, ModelSlot> models_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, NodeSlot> nodes_ ABSL_GUARDED_BY(mu_);
  absl::Mutex answers_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Answer>> answers_
      ABSL_GUARDED_BY(answers_mu_);
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PREDICTOR_SERVICE_H_

// Request validation of every perfcast.v1 RPC, as pure functions of the
// request message: what the services check before they touch the store or
// the predictor. Kept apart from the services so that the same code is unit
// tested and fuzzed (tests/fuzz/rpc_request_fuzz.cc) without a server.
//
// Errors are InvalidArgument naming the offending field, or NotFound for an
// unknown catalog GPU; nothing here reads or writes a store.
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_SERVER_REQUEST_VALIDATION_H_
#define PERFCAST_SERVER_REQUEST_VALIDATION_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/gpu_prices.h"
#include "models/hardware.h"
#include "predictor/recommend.h"
#include "perfcast/v1/node_registry.pb.h"
#include "perfcast/v1/predictor.pb.h"
#include "perfcast/v1/profile_store.pb.h"
#include "predictor/evaluate.h"
#include "predictor/job.h"
#include "predictor/parallel.h"
#include "predictor/predictor.h"
#include "predictor/selection.h"
#include "serving/pricer.h"

namespace perfcast::server {

// --- NodeRegistry ---
// Register: the node to store. A catalog GPU name is resolved against
// `catalog` (NotFound if unknown); a spec needs positive, finite
// memory_bandwidth_gbs and fp32_tflops; gpu_count 0 reads as 1 and may not
// exceed models::kMaxGpusPerNode.
absl::StatusOr<models::Node> NodeFromRegisterRequest(const v1::RegisterNodeRequest& request,
                                                     const models::GpuCatalog& catalog);
// Get, Deregister: a node name is required.
absl::Status ValidateNodeName(absl::string_view name);
// List: the store filter (page size 0 reads as 100).
absl::StatusOr<db::NodeFilter> NodeFilterFromRequest(const v1::ListNodesRequest& request);

// --- ProfileStore ---
// Import: a streamed node, its spec-sheet rates completed from `catalog`.
absl::StatusOr<models::Node> NodeFromImport(const v1::Node& wire, const models::GpuCatalog& catalog);
// Export: the scan filter and the number of profiles per response message.
struct ExportQuery {
  db::ProfileFilter filter;
  int batch_size = 1000;
};
absl::StatusOr<ExportQuery> ExportQueryFromRequest(const v1::ExportRequest& request);

// --- Predictor ---
// Predict / PredictBatch: the request's workload, decoded, normalised and
// described (see models::Describe for the ranges). A workload given as a
// Hugging Face config or a torchvision name is resolved first
// (models/model_source.h); the descriptor's spec is what was predicted.
absl::StatusOr<models::WorkloadDescriptor> DescribeWorkload(const v1::PredictRequest& request);
// Predict / PredictBatch: the job size, samples and epochs or iterations
// (see predictor::ValidateJobSize).
absl::StatusOr<predictor::JobSize> JobFromRequest(const v1::PredictRequest& request);
// Predict / PredictBatch: the node or catalog GPU the request names.
absl::StatusOr<serving::Target> TargetFromRequest(const v1::PredictRequest& request);
// Predict / PredictBatch: the multi-GPU layout asked for; none when it is
// the plain one-GPU step (every degree 0 (unset) or 1, ZeRO 0, no
// checkpointing, pytorch). InvalidArgument for an unknown framework; the
// rest is checked by predictor::ValidateLayout when the layout is priced.
absl::StatusOr<std::optional<predictor::ParallelLayout>> LayoutFromRequest(
    const v1::PredictRequest& request);
// Predict / PredictBatch: the question `request` asks, for
// serving::Pricer::Ask. The target's errors are this function's
// (TargetFromRequest); the job's error travels in the query, which Ask
// reports after the question's own. The workload is keyed by its fields
// (AppendWorkloadKey) and described from `request` (DescribeWorkload, with
// models::ImplementationCaveats as notes for a Hugging Face config or a
// torchvision name) only when the pricer has not met it: the query refers
// to `request`, which must outlive it.
absl::StatusOr<serving::Query> QueryFromRequest(const v1::PredictRequest& request);
// Predict / PredictBatch / Recommend: the workload's loop (unspecified:
// python); InvalidArgument naming the choices for an unknown value.
absl::StatusOr<models::Loop> LoopFromWorkload(const v1::Workload& workload);
// Appends a key of every field of `workload` to `key`: equal content (the
// parameters in any order), equal key; different content, different key.
void AppendWorkloadKey(const v1::Workload& workload, std::string* key);
// Fit / Evaluate: fit options (zero fields take the defaults).
// What a Recommend request asks, checked. InvalidArgument names the field:
// the workload (as DescribeWorkload), the job size (as JobFromRequest), a price
// (see models::ValidateGpuPrice), a GPU count, rank_by, a negative or
// non-finite deadline or budget, or more than kMaxRecommendNames names or
// prices; OutOfRange for a job of more than 2^53 iterations.
inline constexpr int kMaxRecommendNames = 1000;
struct RecommendQuery {
  models::WorkloadDescriptor workload;
  int64_t iterations = 0;
  std::vector<std::string> catalog_gpus;
  std::vector<std::string> node_names;
  bool catalog_only = false;
  bool nodes_only = false;
  std::vector<models::GpuPrice> prices;
  double deadline_seconds = 0;
  double budget_usd = 0;
  std::vector<int> gpu_counts;  // ascending, each once
  predictor::Framework framework = predictor::Framework::kPytorch;
  bool all_layouts = false;
  predictor::RankBy rank_by = predictor::RankBy::kCost;
  std::string model_name;
  models::Loop loop = models::Loop::kPython;
};
absl::StatusOr<RecommendQuery> RecommendQueryFromRequest(const v1::RecommendRequest& request);

absl::StatusOr<predictor::FitOptions> ToFitOptions(const v1::FitOptions& in);
// Fit / Evaluate: which profiles (an unknown phase is InvalidArgument).
absl::StatusOr<predictor::ProfileSelection> SelectionFromRequest(
    const v1::ProfileSelection& selection);
// Evaluate: the split and its options; size_threshold must be >= 0;
// SPLIT_TRAIN_TEST_GPUS needs both GPU lists (no empty name; repeats
// dropped), and the other splits take neither.
absl::StatusOr<predictor::EvaluateOptions> EvaluateOptionsFromRequest(
    const v1::EvaluateRequest& request);

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_REQUEST_VALIDATION_H_

// The two-level predictor (DESIGN.md, "Prediction").
//
// Level 1: per operation class, a weighted least-squares model over
// roofline-style time features of one call, with features chosen by
// cross-validated forward selection, fitted on operation profiles.
// Level 2: per phase (train / inference), a second such model over workload
// features whose leading (forced) feature is the sum of level-1 predictions
// over the workload's operations, fitted on whole model profiles.
// Either level works alone: without operation profiles level 2 regresses on
// the roofline sums directly; without model profiles a prediction is the
// level-1 sum.
//
// Example:
//   absl::StatusOr<PredictorModel> model = Fit(profiles, nodes, FitOptions{});
//   absl::StatusOr<Prediction> p = Predict(*model, spec, nodes.at("gpu-7"));
//   (predictor/job.h turns an iteration time into a job time.)
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PREDICTOR_H_
#define PERFCAST_PREDICTOR_PREDICTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "predictor/cross_validation.h"
#include "predictor/dataset.h"
#include "predictor/model.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

// How cross-validation folds are formed during selection.
enum class GroupBy {
  kNone,          // seeded random k-fold over rows
  kGpu,           // leave-one-GPU-model-out
  kArchitecture,  // leave-one-GPU-generation-out
  kFamily,        // leave-one-workload-family-out
};

struct FitOptions {
  int folds = 5;                  // for GroupBy::kNone
  GroupBy group_by = GroupBy::kNone;
  int max_features = 4;           // per model, level 2's forced level-1 sum included
  double min_improvement = 0.01;  // relative CV-loss decrease to add a feature
  double ridge = 0;
  Scoring scoring = Scoring::kMape;
  uint64_t seed = 1;
  bool fit_level1 = true;
  bool fit_level2 = true;
  // Level-1 features are times, so efficiencies (coefficients) must be >= 0.
  // So are level 2's (the level-1 sum, host dispatch, launches, roofline and
  // memory times all add to a step): a negative term fits one host's rows
  // and, on a host whose latency is larger, can drive the answer below
  // zero. The intercept stays free.
  bool level1_non_negative = true;
  bool level2_non_negative = true;
  // What each level's fits minimise (regression.h, Loss): squared relative
  // error, or absolute relative error — the MAPE the models are judged by,
  // robust to a heavy tail of training rows. Cross-validation fits each fold
  // with the same loss.
  Loss level1_loss = Loss::kSquared;
  Loss level2_loss = Loss::kSquared;
  // A family with at least this many model rows in a phase also gets its
  // own level-2 model (at most `family_max_features` features, times only),
  // as Lattuada et al. fit one model per application: the global model's
  // coefficients are set by whichever families have the most rows (the
  // host-bound proxies), a family's own by its smaller sizes. It is kept
  // only where its cross-validated MAPE beats the global model's on the
  // family's rows. Workloads of other families use the global model. 0
  // turns family models off. A family's model is also offered
  // level1_gpu_ms, level 1 without the launch costs (features.h:
  // LaunchFree): how much launch cost a busy GPU stream hides depends on a
  // family's kernels, so only its own model learns it.
  int family_min_rows = 8;
  int family_max_features = 3;
  // The whole-model profiles not measured by an agent (a user's imported
  // runs: models::MeasuredByAgent) also calibrate their GPU, family and
  // phase (Calibrate) once the model is fitted.
  bool calibrate = false;
  int64_t created_at_us = 0;  // 0: now
};

// Fits from profiles with their descriptors. Models that cannot be fitted
// (too few rows for the folds, a singular design) are skipped with a note in
// PredictorModel::notes. Errors: InvalidArgument for bad options or a
// profile on an unknown node or with a non-positive time; FailedPrecondition
// when no model at all could be fitted (e.g. no rows).
absl::StatusOr<PredictorModel> FitDescribed(absl::Span<const DescribedProfile> profiles,
                                            const std::map<std::string, models::Node>& nodes,
                                            const FitOptions& options);

// The same, describing each profile's workload with models::Describe first;
// InvalidArgument names a profile whose workload cannot be described.
absl::StatusOr<PredictorModel> Fit(absl::Span<const models::Profile> profiles,
                                   const std::map<std::string, models::Node>& nodes,
                                   const FitOptions& options);

// The key of a family's own level-2 model (PredictorModel::level2_by_family):
// "decoder/train".
std::string FamilyScope(absl::string_view family, models::Phase phase);

// How a prediction was made.
enum class Method {
  kTwoLevel,         // level 2 over the sum of level-1 predictions
  kTwoLevelReduced,  // level 2 from too few rows to select features: level1_ms
                     // times one ratio, with a wider band
  kLevel1Sum,        // no level-2 model for the phase: the level-1 sum itself
  kLevel2Direct,     // level 2 without level-1 models (roofline sums as features)
  kLevel1Operation,  // an operation workload: its class's level-1 model
  // Level 2 extrapolated below the physical floor (the operations' roofline
  // time on this node: no step runs faster than its math and memory traffic
  // at the node's rates): the level-1 sum instead (at least the floor), with
  // the band widened as for kLevel1Sum.
  kLevel1Fallback,
};
// "two-level", "two-level-reduced", "level1-sum", "level2-direct",
// "level1-operation", "level1-fallback": the names the API reports; with
// `calibrated`, the same with "+calibrated" ("two-level+calibrated"): the
// answer corrected by the user's measured runs of its GPU, family and phase.
absl::string_view MethodName(Method method, bool calibrated = false);
// The level whose model gave the answer: 1 for kLevel1Sum, kLevel1Operation
// and kLevel1Fallback, 2 otherwise.
int MethodLevel(Method method);

struct Prediction {
  double iteration_ms = 0;  // per training step or inference batch
  // 10th..90th percentile band from held-out relative errors: random-fold
  // errors on a GPU the model was fitted on, leave-one-GPU-out errors on
  // another (fit on one GPU: the random-fold band, 1.75x on a spec-sheet GPU),
  // widened by the spread of spec × efficiency where the rates come from a
  // spec sheet; a level-1 sum standing in for level 2 gets its operations'
  // band widened twofold (all in log space). A GEMM takes the errors of the
  // training GEMMs of its load regime (LoadRegime) where the model kept them.
  // A family's level-2 model's band is at least the global model's scatter
  // on the family's rows around their median (FittedModel::
  // reference_error_quantiles).
  double lo_ms = 0;
  double hi_ms = 0;
  Method method = Method::kTwoLevel;
  double level1_ms = 0;  // the level-1 sum (0 for level2-direct)
  // Per operation class (op-class key -> ms per iteration), adding up to
  // iteration_ms: a level-2 answer's host terms (dispatch_ms,
  // module_latency_ms, launch_ms: host_ms) in "host", the level-1 estimates
  // scaled by breakdown_scale = (iteration_ms - host_ms) / level1_ms.
  std::map<std::string, double> breakdown_ms;
  double breakdown_scale = 1;
  // What the level-2 model's host terms add to the answer (0 for a level-1
  // answer): the part of the step the host binds, as the model sees it.
  double host_ms = 0;
  // "<model>:<feature>" for every feature of every model used, e.g.
  // "level2/train:level1_ms", "level1/gemm:compute_ms".
  std::vector<std::string> features_used;
  // The subset of features_used whose value lies outside its training range.
  std::vector<std::string> extrapolated;
  // Classes without a level-1 model, priced by uncalibrated roofline time.
  std::vector<std::string> uncalibrated_classes;
  RateSource rate_source = RateSource::kMeasured;
  // Corrected by a calibration (PredictorModel::calibrations) fitted on
  // measured runs of this GPU, family and phase; features_used names it.
  bool calibrated = false;
};

// Fits `model`'s calibrations (calibration.h) on the whole-model profiles
// among `runs` (a user's own measured runs; operation profiles are skipped),
// one per GPU model, family and phase, replacing any it had, and notes each
// in model.notes. A run the model cannot price is left out with a note.
// InvalidArgument for a run on a node absent from `nodes` or with a
// non-positive time.
absl::Status Calibrate(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                       const std::map<std::string, models::Node>& nodes);

// Describes `spec` with models::Describe, then prices it with
// PricingPlan(model, node).Predict (pricing_plan.h), with its errors.
absl::StatusOr<Prediction> Predict(const PredictorModel& model, const models::WorkloadSpec& spec,
                                   const models::Node& node);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PREDICTOR_H_

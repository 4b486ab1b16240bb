// Fitting the two-level predictor (predictor.h) on profiles: level 1 per
// operation class on operation profiles, level 2 per phase (and per family
// where a family's own model beats the global one) on whole-model profiles,
// each by cross-validated forward selection; then, optionally, calibrations
// on a user's own measured runs.
//
// Example:
//   absl::StatusOr<PredictorModel> model = Fit(profiles, nodes, FitOptions{});
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_FIT_H_
#define PERFCAST_PREDICTOR_FIT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "predictor/cross_validation.h"
#include "predictor/dataset.h"
#include "predictor/model.h"
#include "predictor/regression.h"

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
  // The agent's whole-model runs calibrate the C++ step of their GPU,
  // family, phase and precision (CalibrateMeasured).
  bool calibrate_measured = true;
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

// Fits `model`'s calibrations (calibration.h) on the whole-model profiles
// among `runs` (a user's own measured runs; operation profiles are skipped),
// one per GPU model, family and phase, replacing any it had, and notes each
// in model.notes. A run the model cannot price is left out with a note.
// InvalidArgument for a run on a node absent from `nodes` or with a
// non-positive time.
absl::Status Calibrate(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                       const std::map<std::string, models::Node>& nodes);

// Fits `model`'s measured_calibrations (calibration.h) on the whole-model
// profiles among `runs` (the agent's), one per GPU model, family, phase and
// precision (CalibrationPrecision), against the model's C++ answers without
// any calibration, each moved by its entry of `held_out_log_ratios` (one per
// run, log(answer of the regression fitted without the run / answer in
// sample); empty: the answers in sample); clears `model`'s calibrations
// (Calibrate fits them after). Errors and notes as Calibrate's, and
// InvalidArgument when `held_out_log_ratios` is neither empty nor one per
// run.
absl::Status CalibrateMeasured(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                               absl::Span<const double> held_out_log_ratios,
                               const std::map<std::string, models::Node>& nodes);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_FIT_H_

// Fitted models and their JSON files.
//
// A FittedModel is one regression (one operation class at level 1, one phase
// at level 2): its selected features, coefficients and scaler, its
// cross-validated error and what it was trained on. A PredictorModel is the
// set a prediction needs: level-1 and level-2 models, the learned rate
// efficiencies, and the memory and power calibrations.
//
// JSON round-trips bit-exactly: nlohmann_json prints doubles in their
// shortest form that parses back to the same value, and every double stored
// is finite (serialisation refuses NaN and infinities).
//
// Thread-safe: plain values.
#ifndef PERFCAST_PREDICTOR_MODEL_H_
#define PERFCAST_PREDICTOR_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "models/workload.h"
#include "predictor/calibration.h"
#include "predictor/features.h"
#include "predictor/cross_validation.h"
#include "predictor/memory.h"
#include "predictor/power.h"
#include "predictor/rates.h"
#include "predictor/regression.h"

namespace perfcast::predictor {


struct FittedModel {
  int level = 1;                       // 1: operation class, 2: workload
  std::string target;                  // "call_ms" or "iteration_ms"
  std::string scope;                   // op class name or phase name
  // Level 2 from too few rows for selection: level1_ms times one ratio
  // (no intercept), its errors from leave-one-out.
  bool reduced = false;
  std::vector<std::string> features;   // selected, in selection order
  LinearFit fit;                       // over `features`, in that order
  RegressionOptions regression;
  Scoring scoring = Scoring::kMape;
  double cv_loss = 0;                  // in `scoring`'s terms
  double cv_mape = 0;                  // always reported
  // Quantiles of the held-out relative error (predicted − measured)/measured
  // at 0, 1, ..., 100 percent: the error distribution behind intervals.
  std::vector<double> cv_error_quantiles;
  // The same from leave-one-GPU-out folds (empty when the rows come from one
  // GPU): the error to expect on a GPU the model has not seen, which is what
  // an interval for a spec-only GPU must cover.
  std::vector<double> transfer_error_quantiles;
  // The same two over the rows of one load regime (a GEMM with an operand
  // row that is not a multiple of 16 bytes loads narrow: its kernels are
  // slower and their speed harder to tell, so its errors are wider:
  // docs/code-evidence.md), where each regime has kMinRegimeRows rows; empty
  // otherwise, and the pooled quantiles serve. The regimes' transfer
  // quantiles are the typical held-out GPU's where at least three GPUs have
  // kMinRegimeRows rows of the regime: quantile by quantile, the median over
  // those GPUs of each one's own quantiles (pooled, one odd GPU's bias
  // widens every band); else the pooled ones.
  std::vector<double> narrow_cv_error_quantiles;
  std::vector<double> narrow_transfer_error_quantiles;
  std::vector<double> wide_cv_error_quantiles;
  std::vector<double> wide_transfer_error_quantiles;
  // Batched GEMMs with wide loads (LoadRegime: cuBLAS runs them with its
  // batched kernels), kept apart from single ones: their errors differ
  // (docs/code-evidence.md, "Error bands on NeuSight's GPUs"). Empty as the
  // others are, and in models saved before the regime existed.
  std::vector<double> batched_cv_error_quantiles;
  std::vector<double> batched_transfer_error_quantiles;
  // A family's level-2 model only (PredictorModel::level2_by_family): the
  // global level-2 model's held-out errors on the family's rows, whose
  // spread around their median is the least its band may show (BandFor).
  // The family model earns that median back (the family's offset, which it
  // fits); that it also scatters less than a model over every family did,
  // its own errors can only show on the GPUs it was fitted on. Empty
  // elsewhere and in models saved before it existed.
  std::vector<double> reference_error_quantiles;
  // What the distance spread (distance.h) is multiplied by in this model's
  // band for a GPU priced from its spec sheet (BandFor). A rate error moves
  // a kernel's time and a whole step's by different amounts (level 2 absorbs
  // part of it), so each model learns its own: calibrated at fit time on
  // leave-one-architecture-out folds of the training GPUs
  // (CalibrateDistanceScale). 1 where no fold could be made (one
  // architecture) and in models saved before it existed.
  double distance_scale = 1;
  int64_t training_rows = 0;
  std::vector<std::string> training_gpus;  // distinct GPU models, sorted
  std::vector<double> feature_min;          // per selected feature
  std::vector<double> feature_max;
  int64_t created_at_us = 0;

  // The relative error at quantile q in [0, 1], interpolated, of the
  // random-fold errors or (`unseen_gpu`, where there are any) of the
  // leave-one-GPU-out errors; of the rows of load regime `width` where the
  // model kept them.
  double ErrorQuantile(double q, bool unseen_gpu = false,
                       LoadWidth width = LoadWidth::kAny) const;
  // The same of reference_error_quantiles; 0 when empty.
  double ReferenceErrorQuantile(double q) const;

  friend bool operator==(const FittedModel&, const FittedModel&) = default;
};

// Rows each load regime needs for its own error quantiles (and at least two
// regimes must have them).
inline constexpr int64_t kMinRegimeRows = 100;

struct PredictorModel {
  int format_version = 1;
  std::map<models::OpClass, FittedModel> level1;
  std::map<models::Phase, FittedModel> level2;
  // Level 2 of single families, keyed "family/phase" (FitOptions::
  // family_min_rows); a workload of such a family and phase uses it instead
  // of the global one. Empty in model files written before they existed.
  std::map<std::string, FittedModel> level2_by_family;
  EfficiencyTable efficiencies;
  // Rates read off the training nodes' own operation profiles, per node name
  // (profile_rates.h): they stand in for agent measurements at prediction.
  std::map<std::string, std::map<std::string, double>> profile_rates;
  // LeaveOneOutRateSpread of the training nodes: widens the intervals of
  // GPUs priced from their spec sheets.
  std::map<std::string, double> rate_spread;
  // The vendors and PowerClass()es of the nodes the efficiencies were
  // learned on, sorted: what a target's distance (distance.h) is measured
  // from. Empty in model files written before distances were reported.
  std::vector<std::string> training_vendors;
  std::vector<std::string> training_power_classes;
  // Peak device memory and board power; empty in model files written before
  // they existed (predictions are then analytic / default).
  MemoryModel memory;
  PowerModel power;
  // Corrections fitted on a user's measured runs (Calibrate), by
  // CalibrationKey; empty in models fitted without them.
  CalibrationTable calibrations;
  // Corrections of the C++ step fitted on the agent's own whole-model runs
  // (CalibrateMeasured), by MeasuredCalibrationKey; empty in models fitted
  // without them.
  CalibrationTable measured_calibrations;
  // The same per measured workload, against its group's corrected answer
  // (CalibrateMeasured), by RunCalibrationKey.
  CalibrationTable run_calibrations;
  std::vector<std::string> notes;  // what Fit skipped and why
  int64_t created_at_us = 0;

  friend bool operator==(const PredictorModel&, const PredictorModel&) = default;
};

// The op-class names model files use: those of models/descriptor.h
// ("gemm", "conv", ..., "h2d", "host").
absl::string_view OpClassKey(models::OpClass op_class);
absl::StatusOr<models::OpClass> ParseOpClassKey(absl::string_view name);

// Serialises to JSON text. InvalidArgument if some number is not finite.
absl::StatusOr<std::string> SerializeModel(const PredictorModel& model);
// Parses SerializeModel's output. InvalidArgument on malformed JSON, a
// missing or mistyped field, an unknown format version or op class, or
// inconsistent vector lengths.
absl::StatusOr<PredictorModel> ParseModel(absl::string_view json);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_MODEL_H_

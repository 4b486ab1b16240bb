// What a prediction answers (Prediction) and how it was made (Method).
// PricingPlan (pricing_plan.h) makes them; Predict below is the shortcut
// from a workload's spec.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PREDICT_H_
#define PERFCAST_PREDICTOR_PREDICT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "predictor/distance.h"
#include "predictor/model.h"
#include "predictor/python_loop.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

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
  double level1_ms = 0;  // the level-1 sum of the operations asked (0 for level2-direct)
  // Per operation class (op-class key -> ms per iteration), adding up to
  // iteration_ms: a level-2 answer's host terms (dispatch_ms,
  // module_latency_ms, launch_ms: host_ms) in "host", the level-1 estimates
  // scaled by breakdown_scale = (iteration_ms - host_ms) / level1_ms (for a
  // strict-fp32 step priced from its fp32 twin, the twin's level-1 sum plus
  // its convolutions' FP32 math in place of level1_ms).
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
  // How far the GPU is from the ones the model learned from; the band above
  // widens with it (distance.h).
  Distance distance;
  // Corrected by a calibration (PredictorModel::calibrations) fitted on
  // measured runs of this GPU, family and phase; features_used names it.
  bool calibrated = false;
  // The loop priced (python_loop.h): kCpp is the agent's step as the model
  // learned it; kPython composes it with a Python loop's host work, which
  // host_ms and the "host" breakdown entry include (a model workload only:
  // an operation is one call whatever the loop).
  models::Loop loop = models::Loop::kCpp;
  PythonLoopPart python;  // kPython only
};

// Describes `spec` with models::Describe, then prices it with
// PricingPlan(model, node).Predict (pricing_plan.h), with its errors.
absl::StatusOr<Prediction> Predict(const PredictorModel& model, const models::WorkloadSpec& spec,
                                   const models::Node& node,
                                   models::Loop loop = models::Loop::kCpp);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PREDICT_H_

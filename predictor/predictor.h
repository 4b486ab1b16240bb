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
// fit.h fits the model, pricing_plan.h prices workloads with it (the one
// implementation of a prediction) and predict.h says what an answer holds;
// this header gathers fit.h and predict.h.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PREDICTOR_H_
#define PERFCAST_PREDICTOR_PREDICTOR_H_

#include "predictor/fit.h"
#include "predictor/predict.h"

#endif  // PERFCAST_PREDICTOR_PREDICTOR_H_

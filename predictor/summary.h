// What a fitted PredictorModel is, in a few numbers and one line: what the
// store keeps beside each model and what ListModels shows.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_SUMMARY_H_
#define PERFCAST_PREDICTOR_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "predictor/model.h"
#include "predictor/predictor.h"

namespace perfcast::predictor {

struct ModelSummary {
  // "iteration_ms" when the model has a level 2, else "call_ms": what the
  // top level predicts.
  std::string target;
  // "level1: gemm[compute_ms] 4.1% ...; level2: train[level1_ms,...] 6.0%; CV MAPE 6.00%"
  std::string line;
  // The top level's CV MAPE (weighted by training rows): what a user's
  // query sees.
  double cv_mape = 0;
  int64_t training_rows = 0;  // both levels
};

ModelSummary Summarize(const PredictorModel& model);

// "level1/<op class>:<feature>" and "level2/<phase>:<feature>" for every
// selected feature, level 1 first.
std::vector<std::string> SelectedFeatures(const PredictorModel& model);

// False when every regression kept its intercept alone: such a model answers
// one constant for every query (a singular design in disguise).
bool HasAnyFeature(const PredictorModel& model);

// The CV MAPE to report beside a prediction of `phase` made by `method`:
// level 2's for that phase when level 2 answered, else the model's overall
// `summary_cv_mape`.
double PredictionCvMape(const PredictorModel& model, models::Phase phase, Method method,
                        double summary_cv_mape);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_SUMMARY_H_

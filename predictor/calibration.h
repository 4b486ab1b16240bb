// Calibration from a user's own measured runs (DESIGN.md, "The user's runs
// are data").
//
// The two-level model prices a (GPU, family) pair from what it learned over
// every GPU and family; a user's whole-model runs on one GPU say how far off
// that answer is there. A calibration is one multiplicative correction per
// (GPU model, family, phase), fitted on those runs against the model's own
// answers for them as a Python loop runs them (python_loop.h; a correction
// of the composed answer, applied to either loop's answer): the mean log ratio measured / predicted, shrunk toward 1
// as a random effect (prior spread: the model's own interval on those runs;
// noise: the runs' scatter around their mean), so that one run moves the
// answer less than five that agree. The interval of a calibrated answer is
// the predictive spread of a new run of the group (the offset's remaining
// uncertainty plus the runs' scatter), never wider than the model's own.
//
// The agent's own whole-model runs calibrate too, one correction per (GPU
// model, family, phase, precision) of the C++ step they timed, applied to
// the C++ step before a Python loop is composed on it: the regression
// serves every family from terms shared across them, and a workload measured
// on a GPU should pull the answers for its neighbours there toward what was
// measured. The group's runs are compared with the regression's answers
// out of fold (each run's answer from the model fitted without its fold), as
// a new workload's answer is made; among the sizes the runs span, their
// scatter is the interval (never wider than the model's own); for a size
// outside them the runs' scatter is widened by how far corrections missed
// when carried to a size left out (over the groups that ran several sizes),
// and that band stands even where the model's own is narrower. Precision is
// part of the group because its kernels (and their efficiency) differ by
// precision.
// A workload the agent measured is then its own group too, fitted against
// the group's corrected answer: asked again on that GPU, it is answered with
// (nearly) what its runs measured and the spread their repeats allow.
//
// Thread-safe: plain values and pure functions.
#ifndef PERFCAST_PREDICTOR_CALIBRATION_H_
#define PERFCAST_PREDICTOR_CALIBRATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "models/descriptor.h"
#include "models/workload.h"

namespace perfcast::predictor {

struct Calibration {
  double factor = 1;  // multiplies the model's iteration time
  // Standard deviation, in log space, of a new run of the group around the
  // calibrated answer: what its interval shows.
  double log_sd = 0;
  int64_t rows = 0;   // the measured runs it was fitted on
  // The mean log ratio measured / predicted before shrinkage, for reports.
  double raw_log_ratio = 0;
  // The sizes (WorkloadDescriptor::inner_modules) the runs span, and the
  // spread shown for a workload outside them (max_inner_modules 0: every
  // size gets log_sd): the runs' scatter says how far a new run lands among
  // the sizes they measured, not how a correction carries to a larger or a
  // smaller model.
  int64_t min_inner_modules = 0;
  int64_t max_inner_modules = 0;
  double beyond_log_sd = 0;

  // Whether a workload of `inner_modules` lies outside the runs' sizes.
  bool Beyond(int64_t inner_modules) const;
  // beyond_log_sd there, else log_sd.
  double LogSdFor(int64_t inner_modules) const;

  friend bool operator==(const Calibration&, const Calibration&) = default;
};

// Calibrations by CalibrationKey.
using CalibrationTable = std::map<std::string, Calibration>;

// "H100-SXM5-80GB/resnet_imagenet/train".
std::string CalibrationKey(absl::string_view gpu_model, absl::string_view family,
                           models::Phase phase);

// "H200-SXM-141GB/bert/inference/fp32": the group of an agent's runs.
std::string MeasuredCalibrationKey(absl::string_view gpu_model, absl::string_view family,
                                   models::Phase phase, models::Precision precision);

// "H200-SXM-141GB/model/bert{...}/b32/fp32/inference/-": the runs of one
// workload (`spec`, its precision as CalibrationPrecision names it) on a GPU
// model.
std::string RunCalibrationKey(absl::string_view gpu_model, const models::WorkloadSpec& spec);

// The precision whose agent runs calibrate `descriptor`: its own, except that
// a strict-fp32 workload without convolutions runs the kernels fp32 runs
// (the two differ only in cuDNN's TF32).
models::Precision CalibrationPrecision(const models::WorkloadDescriptor& descriptor);

// The group's calibration, or nullptr.
const Calibration* FindCalibration(const CalibrationTable& table, absl::string_view gpu_model,
                                   absl::string_view family, models::Phase phase);

// What a calibrated answer lists among its features:
// "calibration/H100-SXM5-80GB/resnet_imagenet/train:measured_runs".
std::string CalibrationLabel(absl::string_view key);

// What the scatter of a group's runs is taken to be before any are seen
// (weighing two runs): one run alone still leaves a new run of another size
// a few percent away.
inline constexpr double kPriorRunLogSd = 0.05;

// One group's runs, as log(measured / predicted) and the model's own
// interval on each (log(hi / lo)): the calibration they give. Both have one
// entry per run; an empty group gives the identity. `prior_run_log_sd`
// replaces kPriorRunLogSd where the runs are repeats of one workload.
Calibration FitCalibration(const std::vector<double>& log_ratios,
                           const std::vector<double>& band_log_widths,
                           double prior_run_log_sd = kPriorRunLogSd);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_CALIBRATION_H_

// Pieces of a prediction (PricingPlan) that read as rules of their own:
// intervals, attention split into its GEMMs, the level-1 answer, host terms
// and the breakdown. Internal to perfcast_predictor.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PREDICTION_PARTS_H_
#define PERFCAST_PREDICTOR_PREDICTION_PARTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "predictor/model.h"
#include "predictor/predictor.h"

namespace perfcast::predictor::internal {

// A level-1 sum standing in for a missing level-2 model misses what level 2
// corrects (operations the descriptor leaves out, overlap, host work): its
// band is this many times wider, in log space, than the operations' bands.
inline constexpr double kLevel1FallbackWidening = 2;

// The z-score of the 90th percentile of a normal distribution: a log-normal
// spread s widens an 80% band by kBandZ90 · s on either side.
inline constexpr double kBandZ90 = 1.2816;

// Where a prediction goes: the GPU model, and whether its rates come from
// its spec sheet (nothing measured on it).
struct Target {
  std::string gpu;
  bool spec_rates = false;
};

// What an interval multiplies a prediction by: lo / predicted and
// hi / predicted.
struct BandFactors {
  double lo = 1;
  double hi = 1;
};

// Relative-error band around a prediction: measured ≈ predicted / (1 + e).
// On a GPU the model was not fitted on it takes the leave-one-GPU-out errors
// (or, with no other GPU to learn them from, the random-fold band, widened
// 1.75 times in log space where the GPU's rates come from its spec sheet);
// on rates from a spec sheet, the spread of the binding rate (`rate_spread`,
// log-normal, DistanceSpread) times model.distance_scale adds in quadrature.
BandFactors BandFor(const FittedModel& model, const Target& target, double rate_spread,
                    LoadWidth width = LoadWidth::kAny);

// Widens `prediction`'s band by a log-normal `rate_spread` in quadrature, as
// BandFor adds a spec rate's spread (a precision path no training GPU
// measured, PrecisionPathSpread). Nothing changes when it is 0.
void WidenBand(double rate_spread, Prediction& prediction);

// The operations an unfused attention core runs, for a model without an
// attention class of its own: the QKᵀ and AV batched GEMMs, the scale and
// the softmax; backward: four batched GEMMs and the softmax and scale
// backward. The record's other costs (layout copies) stay element-wise.
std::vector<models::Operation> SplitAttention(const models::Operation& op);

// FailedPrecondition when `model` cannot price `descriptor`: no level-2
// model for its phase (`have_level2` false) and no level-1 models, or an
// operation whose class has no level-1 model.
absl::Status CheckCanPrice(const PredictorModel& model,
                           const models::WorkloadDescriptor& descriptor,
                           bool have_level2);

// Whether feature j's `value` lies outside `model`'s training range; a
// relative slack keeps values a rounding away from the edge inside.
bool OutsideTrainingRange(const FittedModel& model, size_t j, double value);

// The method a level-2 answer reports: level2-direct only when the model
// uses no level-1 pass (neither level1_ms nor level1_gpu_ms), else two-level,
// reduced when the model is the one-ratio fit of few rows.
Method Level2Method(bool uses_level1, bool uses_gpu, bool reduced);

// Makes `prediction` the level-1 answer: the sum `level1_ms` with its
// operations' band [level1_lo, level1_hi]. With method kLevel1Fallback (a
// level-2 answer fell below the step's roofline, `floor_ms`) the sum is
// raised to `floor_ms` where below it, the band keeping its shape; otherwise
// the method becomes kLevel1Operation or kLevel1Sum. A whole step's band is
// widened kLevel1FallbackWidening times in log space (one operation's is
// its own).
void AnswerWithLevel1(double level1_ms, double level1_lo, double level1_hi, double floor_ms,
                      bool operation, Prediction& prediction);

// Level-2 features that price the host's work on a step rather than the
// GPU's: dispatch_ms, module_latency_ms and launch_ms.
bool IsHostTerm(absl::string_view workload_feature);

// What `model`'s host terms (IsHostTerm) add to its answer for the feature
// `values` (in model.features' order): the sum of their raw coefficients
// times their values, at least 0.
double HostTermsMs(const FittedModel& model, absl::Span<const double> values);

// Makes `prediction` (its time, band and flag) the calibrated answer for a
// workload of `inner_modules` (Calibration::LogSdFor), and scales `host_ms`,
// level 2's host terms, with it, before SetBreakdownScale. The band keeps its
// shape where the calibration's spread is wider, except beyond the runs'
// sizes (Calibration::Beyond), where the calibration's spread is the band.
void ApplyCalibration(const Calibration& calibration, int64_t inner_modules, double& host_ms,
                      Prediction& prediction);

// Makes the breakdown add up to the answer: sets prediction.host_ms
// (`host_ms`, a level-2 answer's host terms, 0 for a level-1 answer, capped
// at the answer) and breakdown_scale = (iteration_ms - host_ms) / level1_ms.
// The caller (PricingPlan) keeps the breakdown itself: it scales each level-1
// class by breakdown_scale and adds host_ms to the "host" class.
void SetBreakdownScale(double level1_ms, double host_ms, Prediction& prediction);

}  // namespace perfcast::predictor::internal

#endif  // PERFCAST_PREDICTOR_PREDICTION_PARTS_H_

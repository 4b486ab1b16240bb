#include "predictor/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "predictor/prediction_parts.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"

namespace perfcast::predictor {
namespace {

// A 10th..90th percentile interval is this many standard deviations either
// side of a normal's centre.
constexpr double kZ90 = 1.2815515655446004;

// What the scatter of a group's runs is taken to be before any are seen, and
// how many runs that guess weighs: one run alone (no scatter of its own)
// still leaves a new run of another size a few percent away.
constexpr double kPriorRunLogSd = 0.05;
constexpr double kPriorRunWeight = 2;

}  // namespace

std::string CalibrationKey(absl::string_view gpu_model, absl::string_view family,
                           models::Phase phase) {
  return absl::StrCat(gpu_model, "/", family, "/", models::PhaseName(phase));
}

const Calibration* FindCalibration(const CalibrationTable& table, absl::string_view gpu_model,
                                   absl::string_view family, models::Phase phase) {
  if (table.empty()) return nullptr;  // most models: no key to build
  auto it = table.find(CalibrationKey(gpu_model, family, phase));
  return it == table.end() ? nullptr : &it->second;
}

Calibration FitCalibration(const std::vector<double>& log_ratios,
                           const std::vector<double>& band_log_widths) {
  Calibration c;
  const size_t n = log_ratios.size();
  if (n == 0 || band_log_widths.size() != n) return c;
  double mean = 0, prior_var = 0;
  for (size_t i = 0; i < n; ++i) {
    mean += log_ratios[i];
    const double sd = band_log_widths[i] / (2 * kZ90);
    prior_var += sd * sd;
  }
  mean /= static_cast<double>(n);
  prior_var /= static_cast<double>(n);
  double squares = 0;
  for (double r : log_ratios) squares += (r - mean) * (r - mean);
  const double run_var = (squares + kPriorRunWeight * kPriorRunLogSd * kPriorRunLogSd) /
                         (static_cast<double>(n) - 1 + kPriorRunWeight);
  // The group's offset as a random effect: prior N(0, prior_var) from the
  // model's own interval, n runs each with variance run_var.
  const double precision = static_cast<double>(n) * prior_var + run_var;
  const double weight = prior_var > 0 ? static_cast<double>(n) * prior_var / precision : 0;
  const double offset_var = prior_var > 0 ? prior_var * run_var / precision : run_var;
  c.factor = std::exp(weight * mean);
  c.log_sd = std::sqrt(offset_var + run_var);
  c.rows = static_cast<int64_t>(n);
  c.raw_log_ratio = mean;
  return c;
}

absl::Status Calibrate(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                       const std::map<std::string, models::Node>& nodes) {
  model.calibrations.clear();  // the model's own answers, uncorrected
  struct Group {
    std::vector<double> log_ratios;
    std::vector<double> band_log_widths;
  };
  std::map<std::string, Group> groups;
  std::map<std::string, std::unique_ptr<PricingPlan>> plans;  // by node name
  for (const DescribedProfile& run : runs) {
    const models::Profile& p = run.profile;
    if (p.workload.kind != models::WorkloadKind::kModel) continue;
    auto node = nodes.find(p.node_name);
    if (node == nodes.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibrate: profile ", p.id, " names unknown node '", p.node_name, "'"));
    }
    if (!(p.iteration.mean_ms > 0) || !std::isfinite(p.iteration.mean_ms)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "calibrate: profile ", p.id, " has mean time ", p.iteration.mean_ms, " ms"));
    }
    std::unique_ptr<PricingPlan>& plan = plans[node->first];
    if (plan == nullptr) plan = std::make_unique<PricingPlan>(model, node->second);
    // A run is compared with the answer for the loop that measured it.
    absl::StatusOr<Prediction> predicted = plan->Predict(run.descriptor, models::MeasuredLoop(p));
    if (!predicted.ok()) {
      model.notes.push_back(absl::StrCat("calibration: ", p.workload.Key(), " on ",
                                         p.node_name, " left out: ",
                                         predicted.status().message()));
      continue;
    }
    Group& group = groups[CalibrationKey(node->second.gpu.model, p.workload.family,
                                         p.workload.phase)];
    group.log_ratios.push_back(std::log(p.iteration.mean_ms / predicted->iteration_ms));
    group.band_log_widths.push_back(
        predicted->lo_ms > 0 ? std::log(predicted->hi_ms / predicted->lo_ms) : 0);
  }
  for (auto& [key, group] : groups) {
    Calibration c = FitCalibration(group.log_ratios, group.band_log_widths);
    model.notes.push_back(absl::StrFormat(
        "calibrated %s on %d measured run%s: the model's answers there times %.3f (the runs "
        "alone say %.3f), a new run within %.1f%% (one standard deviation)",
        key, c.rows, c.rows == 1 ? "" : "s", c.factor, std::exp(c.raw_log_ratio),
        100 * (std::exp(c.log_sd) - 1)));
    model.calibrations[key] = c;
  }
  return absl::OkStatus();
}

std::string CalibrationLabel(absl::string_view key) {
  return absl::StrCat("calibration/", key, ":measured_runs");
}

namespace internal {

void ApplyCalibration(const Calibration& calibration, double& host_ms, Prediction& prediction) {
  const double center = prediction.iteration_ms;
  const double below = prediction.lo_ms > 0 ? std::log(center / prediction.lo_ms) : 0;
  const double above = prediction.hi_ms > 0 ? std::log(prediction.hi_ms / center) : 0;
  const double half = kZ90 * calibration.log_sd;
  prediction.iteration_ms = center * calibration.factor;
  host_ms *= calibration.factor;
  prediction.lo_ms = prediction.iteration_ms * std::exp(-std::min(below, half));
  prediction.hi_ms = prediction.iteration_ms * std::exp(std::min(above, half));
  prediction.calibrated = true;
}

}  // namespace internal
}  // namespace perfcast::predictor

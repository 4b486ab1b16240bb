#include "predictor/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "predictor/prediction_parts.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"

namespace perfcast::predictor {
namespace {

// How many runs the guess of a group's scatter weighs (kPriorRunLogSd).
constexpr double kPriorRunWeight = 2;
// The least scatter a new run of a measured workload is taken to have,
// whatever the agent's repeats said: the Python loop a user runs repeats
// the agent's step no closer than a few percent (data/README.md, m16), and
// a band narrower than that misses it.
constexpr double kMinRepeatLogSd = 0.04;

// The mean variance, in log space, of the normal whose 10th..90th
// percentile band has each of `band_log_widths` (log(hi / lo)).
double MeanBandVariance(const std::vector<double>& band_log_widths) {
  double sum = 0;
  for (double width : band_log_widths) {
    const double sd = width / (2 * internal::kBandZ90);
    sum += sd * sd;
  }
  return sum / static_cast<double>(band_log_widths.size());
}

}  // namespace

bool Calibration::Beyond(int64_t inner_modules) const {
  return max_inner_modules > 0 &&
         (inner_modules < min_inner_modules || inner_modules > max_inner_modules);
}

double Calibration::LogSdFor(int64_t inner_modules) const {
  return Beyond(inner_modules) ? beyond_log_sd : log_sd;
}

std::string CalibrationKey(absl::string_view gpu_model, absl::string_view family,
                           models::Phase phase) {
  return absl::StrCat(gpu_model, "/", family, "/", models::PhaseName(phase));
}

std::string MeasuredCalibrationKey(absl::string_view gpu_model, absl::string_view family,
                                   models::Phase phase, models::Precision precision) {
  return absl::StrCat(CalibrationKey(gpu_model, family, phase), "/",
                      models::PrecisionName(precision));
}

std::string RunCalibrationKey(absl::string_view gpu_model, const models::WorkloadSpec& spec) {
  return absl::StrCat(gpu_model, "/", spec.Key());
}

models::Precision CalibrationPrecision(const models::WorkloadDescriptor& descriptor) {
  const models::Precision precision = descriptor.spec.precision;
  if (precision != models::Precision::kStrictFp32) return precision;
  for (const models::Operation& op : descriptor.operations) {
    if (op.op_class == models::OpClass::kConv) return precision;
  }
  return models::Precision::kFp32;
}

const Calibration* FindCalibration(const CalibrationTable& table, absl::string_view gpu_model,
                                   absl::string_view family, models::Phase phase) {
  if (table.empty()) return nullptr;  // most models: no key to build
  auto it = table.find(CalibrationKey(gpu_model, family, phase));
  return it == table.end() ? nullptr : &it->second;
}

Calibration FitCalibration(const std::vector<double>& log_ratios,
                           const std::vector<double>& band_log_widths,
                           double prior_run_log_sd) {
  Calibration c;
  const size_t n = log_ratios.size();
  if (n == 0 || band_log_widths.size() != n) return c;
  double mean = 0;
  for (double r : log_ratios) mean += r;
  mean /= static_cast<double>(n);
  const double prior_var = MeanBandVariance(band_log_widths);
  double squares = 0;
  for (double r : log_ratios) squares += (r - mean) * (r - mean);
  const double run_var = (squares + kPriorRunWeight * prior_run_log_sd * prior_run_log_sd) /
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

namespace {

// One group's runs as FitGroups gathers them.
struct Group {
  std::vector<double> log_ratios;
  std::vector<double> band_log_widths;
  double repeat_var_sum = 0;
  // The log ratios by the size (inner modules) of the run.
  std::map<int64_t, std::vector<double>> by_size;
};

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// How far a group's correction lands from a size it did not see: over the
// groups with runs of several sizes, the mean squared difference between
// the smallest (and the largest) size's mean log ratio and the mean of the
// group's other runs, i.e. leaving the size out and extrapolating to it.
// nullopt where no group has two sizes.
std::optional<double> SizeTransferVariance(const std::map<std::string, Group>& groups) {
  double sum = 0;
  int count = 0;
  for (const auto& [key, group] : groups) {
    if (group.by_size.size() < 2) continue;
    for (auto held : {group.by_size.begin(), std::prev(group.by_size.end())}) {
      std::vector<double> others;
      for (const auto& [size, ratios] : group.by_size) {
        if (size != held->first) others.insert(others.end(), ratios.begin(), ratios.end());
      }
      const double miss = Mean(held->second) - Mean(others);
      sum += miss * miss;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

// The key of a run's group; the loop the model's answer for it is priced as.
using GroupKeyFn = std::string (*)(const models::Node& node, const DescribedProfile& run);

std::string UserGroup(const models::Node& node, const DescribedProfile& run) {
  return CalibrationKey(node.gpu.model, run.profile.workload.family, run.profile.workload.phase);
}

std::string MeasuredGroup(const models::Node& node, const DescribedProfile& run) {
  return MeasuredCalibrationKey(node.gpu.model, run.profile.workload.family,
                                run.profile.workload.phase, CalibrationPrecision(run.descriptor));
}

std::string RunGroup(const models::Node& node, const DescribedProfile& run) {
  models::WorkloadSpec spec = run.profile.workload;
  spec.precision = CalibrationPrecision(run.descriptor);
  return RunCalibrationKey(node.gpu.model, spec);
}

// Fits one calibration per group of `runs` against `model`'s answers for
// them (each as the loop that measured it ran), into `table`; where
// `held_out_log_ratios` has one entry per run, each answer is first moved by
// its entry (log of the answer out of fold over the one in sample). A group
// of one workload (`one_workload`) takes its runs' own repeat-to-repeat
// scatter as the prior scatter of a new run, else kPriorRunLogSd; a note per
// group, or one for all (`one_workload`); `what` names the runs in the notes.
// With `across_sizes` each group also gets the spread of carrying it to a
// size its runs did not measure (SizeTransferVariance).
absl::Status FitGroups(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                       absl::Span<const double> held_out_log_ratios,
                       const std::map<std::string, models::Node>& nodes, GroupKeyFn group_of,
                       absl::string_view what, bool one_workload, bool across_sizes,
                       CalibrationTable& table) {
  if (!held_out_log_ratios.empty() && held_out_log_ratios.size() != runs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("calibrate: ", held_out_log_ratios.size(),
                                                   " held-out ratios for ", runs.size(),
                                                   " runs"));
  }
  std::map<std::string, Group> groups;
  std::map<std::string, std::unique_ptr<PricingPlan>> plans;  // by node name
  for (size_t i = 0; i < runs.size(); ++i) {
    const DescribedProfile& run = runs[i];
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
    Group& group = groups[group_of(node->second, run)];
    const double held_out = held_out_log_ratios.empty() ? 0 : held_out_log_ratios[i];
    group.log_ratios.push_back(std::log(p.iteration.mean_ms / predicted->iteration_ms) -
                               held_out);
    group.by_size[run.descriptor.inner_modules].push_back(group.log_ratios.back());
    group.band_log_widths.push_back(
        predicted->lo_ms > 0 ? std::log(predicted->hi_ms / predicted->lo_ms) : 0);
    const double repeat = std::max(p.repeat_cv.value_or(kPriorRunLogSd), kMinRepeatLogSd);
    group.repeat_var_sum += repeat * repeat;
  }
  const std::optional<double> transfer_var =
      across_sizes ? SizeTransferVariance(groups) : std::nullopt;
  for (auto& [key, group] : groups) {
    const double prior_run_log_sd =
        one_workload
            ? std::sqrt(group.repeat_var_sum / static_cast<double>(group.log_ratios.size()))
            : kPriorRunLogSd;
    Calibration c = FitCalibration(group.log_ratios, group.band_log_widths, prior_run_log_sd);
    if (across_sizes && group.by_size.rbegin()->first > 0) {
      // With no group of several sizes to learn it from, carrying the
      // correction is taken to be as uncertain as the model's own answer.
      const double transfer = transfer_var.value_or(MeanBandVariance(group.band_log_widths));
      c.min_inner_modules = group.by_size.begin()->first;
      c.max_inner_modules = group.by_size.rbegin()->first;
      c.beyond_log_sd = std::sqrt(c.log_sd * c.log_sd + transfer);
    }
    table[key] = c;
    if (one_workload) continue;
    model.notes.push_back(absl::StrFormat(
        "calibrated %s on %d %s%s: the model's answers there times %.3f (the runs "
        "alone say %.3f), a new run within %.1f%% (one standard deviation)",
        key, c.rows, what, c.rows == 1 ? "" : "s", c.factor, std::exp(c.raw_log_ratio),
        100 * (std::exp(c.log_sd) - 1)));
  }
  if (one_workload && !groups.empty()) {
    model.notes.push_back(absl::StrFormat(
        "calibrated %d measured workload%s on their own %ss", groups.size(),
        groups.size() == 1 ? "" : "s", what));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Calibrate(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                       const std::map<std::string, models::Node>& nodes) {
  model.calibrations.clear();  // the model's own answers, uncorrected
  CalibrationTable table;
  RETURN_IF_ERROR(
      FitGroups(model, runs, {}, nodes, UserGroup, "measured run", false, false, table));
  model.calibrations = std::move(table);
  return absl::OkStatus();
}

absl::Status CalibrateMeasured(PredictorModel& model, absl::Span<const DescribedProfile> runs,
                               absl::Span<const double> held_out_log_ratios,
                               const std::map<std::string, models::Node>& nodes) {
  // Against the regression's own answers: no calibration of any kind yet.
  model.measured_calibrations.clear();
  model.run_calibrations.clear();
  model.calibrations.clear();
  // Out of fold: the regression was fitted on these very runs, and what it
  // misses on them in sample understates what a new workload sees.
  CalibrationTable groups;
  RETURN_IF_ERROR(FitGroups(model, runs, held_out_log_ratios, nodes, MeasuredGroup, "agent run",
                            false, true, groups));
  model.measured_calibrations = std::move(groups);
  // Each measured workload against its group's corrected answer.
  CalibrationTable workloads;
  RETURN_IF_ERROR(
      FitGroups(model, runs, {}, nodes, RunGroup, "agent run", true, false, workloads));
  model.run_calibrations = std::move(workloads);
  return absl::OkStatus();
}

std::string CalibrationLabel(absl::string_view key) {
  return absl::StrCat("calibration/", key, ":measured_runs");
}

namespace internal {

void ApplyCalibration(const Calibration& calibration, int64_t inner_modules, double& host_ms,
                      Prediction& prediction) {
  const double center = prediction.iteration_ms;
  const double below = prediction.lo_ms > 0 ? std::log(center / prediction.lo_ms) : 0;
  const double above = prediction.hi_ms > 0 ? std::log(prediction.hi_ms / center) : 0;
  const double half = internal::kBandZ90 * calibration.LogSdFor(inner_modules);
  prediction.iteration_ms = center * calibration.factor;
  host_ms *= calibration.factor;
  // Beyond its runs' sizes the correction's own spread is the band, even
  // where the model's is narrower: the answer has moved away from the
  // model's by a correction that may not hold there.
  const bool beyond = calibration.Beyond(inner_modules);
  prediction.lo_ms = prediction.iteration_ms * std::exp(-(beyond ? half : std::min(below, half)));
  prediction.hi_ms = prediction.iteration_ms * std::exp(beyond ? half : std::min(above, half));
  prediction.calibrated = true;
}

}  // namespace internal
}  // namespace perfcast::predictor

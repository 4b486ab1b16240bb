#include "predictor/predictor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "predictor/features.h"
#include "predictor/folds.h"
#include "predictor/sfs.h"

namespace perfcast::predictor {
namespace {

// Interval quantiles: the middle 80% of held-out relative errors.
constexpr double kLowQuantile = 0.1;
constexpr double kHighQuantile = 0.9;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::vector<int>> MakeFolds(const Dataset& data, const FitOptions& options,
                                           std::vector<std::string>& notes,
                                           absl::string_view scope) {
  const int64_t n = data.y.size();
  if (options.group_by != GroupBy::kNone) {
    std::vector<std::string> groups;
    for (const RowInfo& info : data.info) {
      groups.push_back(options.group_by == GroupBy::kGpu            ? info.gpu
                       : options.group_by == GroupBy::kArchitecture ? info.architecture
                                                                    : info.family);
    }
    absl::StatusOr<std::vector<int>> folds = LeaveOneGroupOutFolds(groups);
    if (folds.ok()) return folds;
    notes.push_back(absl::StrCat(scope, ": one group only, random folds instead"));
  }
  if (n < 2 * options.folds) {
    return absl::FailedPreconditionError(absl::StrCat(
        scope, ": ", n, " rows are too few for ", options.folds, "-fold cross-validation (need ",
        2 * options.folds, ")"));
  }
  return RandomFolds(n, options.folds, options.seed);
}

// Selects features by CV, refits on all rows, and records the CV error.
absl::StatusOr<FittedModel> FitOne(const Dataset& data, const FitOptions& options, int level,
                                   absl::string_view scope, bool non_negative,
                                   std::vector<std::string>& notes) {
  const std::string name = absl::StrCat("level", level, "/", scope);
  if (data.y.size() == 0) return absl::FailedPreconditionError(absl::StrCat(name, ": no rows"));
  absl::StatusOr<std::vector<int>> folds = MakeFolds(data, options, notes, name);
  if (!folds.ok()) return folds.status();
  RegressionOptions regression;
  regression.ridge = options.ridge;
  regression.non_negative = non_negative;
  regression.relative_weights = true;
  absl::StatusOr<CrossValidator> cv = CrossValidator::Create(data.x, data.y, *folds, regression);
  if (!cv.ok()) return cv.status();
  SfsOptions sfs;
  sfs.max_features = options.max_features;
  sfs.min_improvement = options.min_improvement;
  sfs.scoring = options.scoring;
  if (level == 2 && !data.feature_names.empty() && data.feature_names.front() == "level1_ms") {
    sfs.forced = {0};
  }
  absl::StatusOr<SfsResult> selection = SelectForward(*cv, sfs);
  if (!selection.ok()) return selection.status();

  FittedModel model;
  model.level = level;
  model.target = level == 1 ? "call_ms" : "iteration_ms";
  model.scope = std::string(scope);
  model.regression = regression;
  model.scoring = options.scoring;
  model.cv_loss = selection->loss;
  const std::vector<int>& selected = selection->selected;
  Eigen::MatrixXd x(data.x.rows(), selected.size());
  for (size_t a = 0; a < selected.size(); ++a) {
    x.col(a) = data.x.col(selected[a]);
    model.features.push_back(data.feature_names[selected[a]]);
    model.feature_min.push_back(x.col(a).minCoeff());
    model.feature_max.push_back(x.col(a).maxCoeff());
  }
  absl::StatusOr<LinearFit> fit = FitLinear(x, data.y, regression);
  if (!fit.ok()) return absl::FailedPreconditionError(absl::StrCat(name, ": ", fit.status().message()));
  model.fit = *std::move(fit);

  absl::StatusOr<Eigen::VectorXd> held_out = cv->HeldOutPredictions(selected);
  if (!held_out.ok()) return held_out.status();
  std::vector<double> errors(data.y.size());
  double mape = 0;
  for (Eigen::Index i = 0; i < data.y.size(); ++i) {
    errors[i] = ((*held_out)(i) - data.y(i)) / data.y(i);
    mape += std::abs(errors[i]);
  }
  model.cv_mape = mape / data.y.size();
  std::sort(errors.begin(), errors.end());
  for (int q = 0; q <= 100; ++q) {
    const double position = q / 100.0 * (errors.size() - 1);
    const size_t below = static_cast<size_t>(position);
    const size_t above = std::min(below + 1, errors.size() - 1);
    model.cv_error_quantiles.push_back(errors[below] +
                                       (position - below) * (errors[above] - errors[below]));
  }
  std::set<std::string> gpus;
  for (const RowInfo& info : data.info) gpus.insert(info.gpu);
  model.training_gpus.assign(gpus.begin(), gpus.end());
  model.training_rows = data.y.size();
  model.created_at_us = options.created_at_us;
  return model;
}

struct ModelUse {
  double value = 0;
  std::vector<std::string> features_used;
  std::vector<std::string> extrapolated;
};

// Evaluates a fitted model on `inputs`, noting features and extrapolation.
absl::StatusOr<double> Apply(const FittedModel& model, const FeatureInputs& inputs,
                             absl::Span<const FeatureDef> table, Prediction* prediction) {
  absl::StatusOr<std::vector<double>> values = EvaluateFeatures(table, inputs, model.features);
  if (!values.ok()) return values.status();
  const std::string name = absl::StrCat("level", model.level, "/", model.scope);
  for (size_t j = 0; j < model.features.size(); ++j) {
    const std::string used = absl::StrCat(name, ":", model.features[j]);
    if (prediction != nullptr) {
      if (std::find(prediction->features_used.begin(), prediction->features_used.end(), used) ==
          prediction->features_used.end()) {
        prediction->features_used.push_back(used);
      }
      // A relative slack: values a rounding away from the edge are inside.
      const double slack = 1e-9 * std::max(std::abs(model.feature_min[j]), std::abs(model.feature_max[j]));
      if (((*values)[j] < model.feature_min[j] - slack || (*values)[j] > model.feature_max[j] + slack) &&
          std::find(prediction->extrapolated.begin(), prediction->extrapolated.end(), used) ==
              prediction->extrapolated.end()) {
        prediction->extrapolated.push_back(used);
      }
    }
  }
  const double y = model.fit.Predict(*values);
  if (!std::isfinite(y)) {
    return absl::FailedPreconditionError(absl::StrCat(name, " predicts a non-finite time"));
  }
  return y;
}

// Relative-error band around a prediction: measured ≈ predicted / (1 + e).
void Band(const FittedModel& model, double predicted, double& lo, double& hi) {
  const double high_error = std::max(model.ErrorQuantile(kHighQuantile), -0.95);
  const double low_error = std::max(model.ErrorQuantile(kLowQuantile), -0.95);
  lo = predicted / (1 + high_error);
  hi = predicted / (1 + low_error);
}

// Level-1 sum over a workload's operations, with per-class breakdown and
// (optionally) the band from each class's error quantiles.
absl::StatusOr<double> Level1Sum(const PredictorModel& model,
                                 const models::WorkloadDescriptor& descriptor,
                                 const EffectiveRates& rates, Prediction* prediction) {
  double total = 0;
  for (const models::Operation& op : descriptor.operations) {
    const std::string key(OpClassKey(op.op_class));
    auto it = model.level1.find(op.op_class);
    double call_ms = 0, lo = 0, hi = 0;
    if (it == model.level1.end()) {
      call_ms = RooflineCallMs(op, rates);
      lo = hi = call_ms;
      if (prediction != nullptr &&
          std::find(prediction->uncalibrated_classes.begin(),
                    prediction->uncalibrated_classes.end(),
                    key) == prediction->uncalibrated_classes.end()) {
        prediction->uncalibrated_classes.push_back(key);
      }
    } else {
      absl::StatusOr<double> y =
          Apply(it->second, OperationInputs(op, rates), OperationFeatureTable(), prediction);
      if (!y.ok()) return y.status();
      // An intercept can push a tiny call below zero; it cannot take less than no time.
      call_ms = std::max(0.0, *y);
      Band(it->second, call_ms, lo, hi);
    }
    total += op.count * call_ms;
    if (prediction != nullptr) {
      prediction->breakdown_ms[key] += op.count * call_ms;
      prediction->lo_ms += op.count * lo;
      prediction->hi_ms += op.count * hi;
    }
  }
  return total;
}

}  // namespace

absl::StatusOr<PredictorModel> FitDescribed(absl::Span<const DescribedProfile> profiles,
                                            const std::map<std::string, models::Node>& nodes,
                                            const FitOptions& options) {
  if (options.folds < 2 || options.max_features < 1 || !(options.ridge >= 0)) {
    return absl::InvalidArgumentError("fit: need folds >= 2, max_features >= 1, ridge >= 0");
  }
  if (profiles.empty()) return absl::FailedPreconditionError("fit: no profiles to fit on");
  PredictorModel model;
  model.created_at_us = options.created_at_us != 0 ? options.created_at_us : NowUs();
  FitOptions fit_options = options;
  fit_options.created_at_us = model.created_at_us;
  std::vector<const models::Node*> node_list;
  for (const auto& [name, node] : nodes) node_list.push_back(&node);
  model.efficiencies = LearnEfficiencies(node_list);
  model.memory = FitMemory(profiles);
  // Board power of whole steps (operation micro-benchmarks hold the GPU in
  // ways no training step does) over the TDP of the GPU they ran on.
  std::vector<PowerSample> power;
  for (const DescribedProfile& p : profiles) {
    if (p.profile.workload.kind != models::WorkloadKind::kModel ||
        !p.profile.conditions.board_power_w.has_value()) {
      continue;
    }
    auto node = nodes.find(p.profile.node_name);
    if (node == nodes.end()) continue;
    power.push_back({p.profile.workload.family,
                     std::string(models::PrecisionName(p.profile.workload.precision)),
                     node->second.gpu.tdp_watts, *p.profile.conditions.board_power_w});
  }
  model.power = FitPower(power);

  if (options.fit_level1) {
    absl::StatusOr<std::map<models::OpClass, Dataset>> datasets =
        BuildOperationDatasets(profiles, nodes, model.efficiencies);
    if (!datasets.ok()) return datasets.status();
    for (const auto& [op_class, data] : *datasets) {
      absl::StatusOr<FittedModel> fitted =
          FitOne(data, fit_options, 1, OpClassKey(op_class), options.level1_non_negative,
                 model.notes);
      if (fitted.ok()) {
        model.level1[op_class] = *std::move(fitted);
      } else {
        model.notes.push_back(std::string(fitted.status().message()));
      }
    }
  }
  if (options.fit_level2) {
    Level1Fn level1;
    if (!model.level1.empty()) {
      level1 = [&model](const models::WorkloadDescriptor& descriptor,
                        const EffectiveRates& rates) {
        return Level1Sum(model, descriptor, rates, nullptr);
      };
    }
    for (models::Phase phase : {models::Phase::kTrain, models::Phase::kInference}) {
      absl::StatusOr<Dataset> data =
          BuildWorkloadDataset(profiles, nodes, model.efficiencies, phase, level1);
      if (data.status().code() == absl::StatusCode::kFailedPrecondition) continue;  // none
      if (!data.ok()) return data.status();
      absl::StatusOr<FittedModel> fitted = FitOne(*data, fit_options, 2, models::PhaseName(phase),
                                                  options.level2_non_negative, model.notes);
      if (fitted.ok()) {
        model.level2[phase] = *std::move(fitted);
      } else {
        model.notes.push_back(std::string(fitted.status().message()));
      }
    }
  }
  if (model.level1.empty() && model.level2.empty()) {
    std::string why = "fit: no model could be fitted";
    for (const std::string& note : model.notes) absl::StrAppend(&why, "; ", note);
    if (model.notes.empty()) absl::StrAppend(&why, " (no operation or model profiles selected)");
    return absl::FailedPreconditionError(why);
  }
  return model;
}

absl::StatusOr<Prediction> PredictDescribed(const PredictorModel& model,
                                            const models::WorkloadDescriptor& descriptor,
                                            const models::Node& node) {
  absl::StatusOr<EffectiveRates> rates = ResolveRates(node, model.efficiencies);
  if (!rates.ok()) return rates.status();
  Prediction prediction;
  prediction.rate_source = rates->source;
  auto level2 = model.level2.find(descriptor.spec.phase);
  const bool have_level2 = level2 != model.level2.end();
  if (!have_level2 && model.level1.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model has no level-2 model for phase '", models::PhaseName(descriptor.spec.phase),
        "' and no level-1 models"));
  }
  absl::StatusOr<double> level1_ms = Level1Sum(model, descriptor, *rates, &prediction);
  if (!level1_ms.ok()) return level1_ms.status();
  if (have_level2) {
    FeatureInputs inputs = WorkloadInputs(descriptor, *rates);
    const bool uses_level1 = std::find(level2->second.features.begin(),
                                       level2->second.features.end(),
                                       "level1_ms") != level2->second.features.end();
    if (uses_level1) inputs["level1_ms"] = *level1_ms;
    absl::StatusOr<double> y = Apply(level2->second, inputs, WorkloadFeatureTable(), &prediction);
    if (!y.ok()) return y.status();
    prediction.iteration_ms = *y;
    prediction.method = uses_level1 ? "two-level" : "level2-direct";
    Band(level2->second, *y, prediction.lo_ms, prediction.hi_ms);
  } else {
    prediction.iteration_ms = *level1_ms;
    prediction.method = "level1-sum";
  }
  if (!std::isfinite(prediction.iteration_ms) || !(prediction.iteration_ms > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model predicts ", prediction.iteration_ms, " ms for ", descriptor.spec.Key(),
        " on ", node.name, ": outside what it can extrapolate to"));
  }
  return prediction;
}

absl::StatusOr<double> PredictOperation(const PredictorModel& model, const models::Operation& op,
                                        const models::Node& node) {
  auto it = model.level1.find(op.op_class);
  if (it == model.level1.end()) {
    return absl::NotFoundError(
        absl::StrCat("no level-1 model for operation class '", OpClassKey(op.op_class), "'"));
  }
  absl::StatusOr<EffectiveRates> rates = ResolveRates(node, model.efficiencies);
  if (!rates.ok()) return rates.status();
  absl::StatusOr<double> y =
      Apply(it->second, OperationInputs(op, *rates), OperationFeatureTable(), nullptr);
  if (!y.ok()) return y.status();
  if (!(*y > 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat("level-1 model '", OpClassKey(op.op_class), "' predicts ", *y, " ms"));
  }
  return *y;
}

absl::StatusOr<JobEstimate> EstimateJob(const Prediction& prediction, int64_t samples,
                                        int64_t batch_size, int64_t epochs,
                                        double per_epoch_overhead_s) {
  if (samples < 1 || batch_size < 1 || epochs < 1 || !(per_epoch_overhead_s >= 0)) {
    return absl::InvalidArgumentError(
        "job estimate: samples, batch size and epochs must be >= 1, overhead >= 0");
  }
  JobEstimate job;
  // samples/batch rounded up, without the overflow of samples + batch - 1.
  const int64_t per_epoch = samples / batch_size + (samples % batch_size != 0 ? 1 : 0);
  if (__builtin_mul_overflow(per_epoch, epochs, &job.iterations)) {
    return absl::OutOfRangeError(absl::StrCat("job estimate: ", per_epoch,
                                              " iterations per epoch times ", epochs,
                                              " epochs overflows the iteration count"));
  }
  const double overhead = epochs * per_epoch_overhead_s;
  job.seconds = job.iterations * prediction.iteration_ms / 1e3 + overhead;
  job.lo_seconds = job.iterations * prediction.lo_ms / 1e3 + overhead;
  job.hi_seconds = job.iterations * prediction.hi_ms / 1e3 + overhead;
  return job;
}

}  // namespace perfcast::predictor

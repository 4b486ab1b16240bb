#include "predictor/fit.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/quantile.h"
#include "base/status_macros.h"
#include "models/iteration_builder.h"
#include "predictor/distance_scale.h"
#include "predictor/features.h"
#include "predictor/folds.h"
#include "predictor/pricing_plan.h"
#include "predictor/profile_rates.h"
#include "predictor/sfs.h"

namespace perfcast::predictor {
namespace {

// GPUs a typical held-out GPU's error quantiles need (TypicalGpuQuantiles).
constexpr size_t kMinTypicalGpus = 3;
// Level 2 needs this many rows for a one-ratio model with leave-one-out errors.
constexpr int kMinReducedRows = 2;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Quantiles at 0, 1, ..., 100 percent of `errors`, interpolated.
std::vector<double> ErrorQuantiles(std::vector<double> errors) {
  std::vector<double> out;
  if (errors.empty()) return out;
  std::sort(errors.begin(), errors.end());
  for (int q = 0; q <= 100; ++q) out.push_back(SortedQuantile(errors, q / 100.0));
  return out;
}

std::vector<std::string> DistinctGpus(const Dataset& data) {
  std::set<std::string> gpus;
  for (const RowInfo& info : data.info) gpus.insert(info.gpu);
  return {gpus.begin(), gpus.end()};
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

// Held-out relative errors of the model on `selected` with one GPU left out
// at a time, per row; empty when the rows come from one GPU or a fold cannot
// be fitted.
std::vector<double> TransferErrors(const Dataset& data, const RegressionOptions& regression,
                                   absl::Span<const int> selected) {
  std::vector<std::string> gpus;
  for (const RowInfo& info : data.info) gpus.push_back(info.gpu);
  absl::StatusOr<std::vector<int>> folds = LeaveOneGroupOutFolds(gpus);
  if (!folds.ok()) return {};
  absl::StatusOr<CrossValidator> cv = CrossValidator::Create(data.x, data.y, *folds, regression);
  if (!cv.ok()) return {};
  absl::StatusOr<Eigen::VectorXd> held_out = cv->HeldOutPredictions(selected);
  if (!held_out.ok()) return {};
  std::vector<double> errors;
  for (Eigen::Index i = 0; i < data.y.size(); ++i) {
    errors.push_back(((*held_out)(i) - data.y(i)) / data.y(i));
  }
  return errors;
}

// The quantiles of `errors` (per row of `data`) over the rows of load
// regime `regime`.
std::vector<double> RegimeQuantiles(const Dataset& data, const std::vector<double>& errors,
                                    LoadWidth regime) {
  std::vector<double> kept;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (data.info[i].load_regime == regime) kept.push_back(errors[i]);
  }
  return ErrorQuantiles(std::move(kept));
}

// The held-out errors a typical GPU shows: per GPU, the quantiles of
// `errors` (leave-one-GPU-out, per row of `data`) over its rows of load
// regime `regime`; then, quantile by quantile, the median over the
// GPUs with kMinRegimeRows such rows (a median of non-decreasing curves is
// one). Pooling instead adds every GPU's own bias to the spread, and the
// oldest GPUs' set the band (docs/code-evidence.md, "Error bands on
// NeuSight's GPUs"). Empty with fewer than three such GPUs: the pooled
// quantiles serve.
std::vector<double> TypicalGpuQuantiles(const Dataset& data, const std::vector<double>& errors,
                                        LoadWidth regime) {
  std::map<std::string, std::vector<double>> by_gpu;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (data.info[i].load_regime == regime) by_gpu[data.info[i].gpu].push_back(errors[i]);
  }
  std::vector<std::vector<double>> curves;
  for (auto& [gpu, gpu_errors] : by_gpu) {
    if (static_cast<int64_t>(gpu_errors.size()) >= kMinRegimeRows) {
      curves.push_back(ErrorQuantiles(std::move(gpu_errors)));
    }
  }
  if (curves.size() < kMinTypicalGpus) return {};
  std::vector<double> typical(curves.front().size());
  std::vector<double> column(curves.size());
  for (size_t q = 0; q < typical.size(); ++q) {
    for (size_t g = 0; g < curves.size(); ++g) column[g] = curves[g][q];
    typical[q] = Quantile(column, 0.5);
  }
  return typical;
}

// Error quantiles per load regime with kMinRegimeRows rows, where at least
// two regimes have them (a regime with fewer rows takes the pooled ones);
// the unseen-GPU ones from the typical held-out GPU where enough GPUs say
// (TypicalGpuQuantiles), else pooled over the regime's rows.
void SetRegimeQuantiles(const Dataset& data, const std::vector<double>& cv_errors,
                        const std::vector<double>& transfer_errors, FittedModel& model) {
  struct Regime {
    LoadWidth width;
    std::vector<double>* cv;
    std::vector<double>* transfer;
  };
  const Regime regimes[] = {
      {LoadWidth::kNarrow, &model.narrow_cv_error_quantiles,
       &model.narrow_transfer_error_quantiles},
      {LoadWidth::kWide, &model.wide_cv_error_quantiles, &model.wide_transfer_error_quantiles},
      {LoadWidth::kBatched, &model.batched_cv_error_quantiles,
       &model.batched_transfer_error_quantiles}};
  std::map<LoadWidth, int64_t> rows;
  for (const RowInfo& info : data.info) ++rows[info.load_regime];
  int with_rows = 0;
  for (const Regime& regime : regimes) with_rows += rows[regime.width] >= kMinRegimeRows ? 1 : 0;
  if (with_rows < 2) return;
  for (const Regime& regime : regimes) {
    if (rows[regime.width] < kMinRegimeRows) continue;
    *regime.cv = RegimeQuantiles(data, cv_errors, regime.width);
    if (transfer_errors.empty()) continue;
    *regime.transfer = TypicalGpuQuantiles(data, transfer_errors, regime.width);
    if (regime.transfer->empty()) {
      *regime.transfer = RegimeQuantiles(data, transfer_errors, regime.width);
    }
  }
}

void Describe(const Dataset& data, const FitOptions& options, FittedModel& model) {
  model.training_gpus = DistinctGpus(data);
  model.training_rows = data.y.size();
  model.created_at_us = options.created_at_us;
}

// Level 2 from a handful of rows: measured ≈ a · level1_ms. The ratio is the
// geometric mean of measured / level-1 (a 20% miss either way weighs alike),
// its errors from leave-one-out, and from leave-one-GPU-out where the rows
// span GPUs.
absl::StatusOr<FittedModel> FitRatio(const Dataset& data, const FitOptions& options,
                                     absl::string_view scope,
                                     std::vector<double>* held_out_log_ratios) {
  const std::string name = absl::StrCat("level2/", scope);
  const int64_t n = data.y.size();
  if (n < kMinReducedRows || data.feature_names.empty() ||
      data.feature_names.front() != "level1_ms") {
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": ", n, " rows and no level-1 sum: too few for even a one-ratio model"));
  }
  Eigen::ArrayXd log_ratio(n);
  for (int64_t i = 0; i < n; ++i) {
    if (!(data.x(i, 0) > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(name, ": a level-1 sum is not positive"));
    }
    log_ratio(i) = std::log(data.y(i) / data.x(i, 0));
  }
  const double total = log_ratio.sum();
  auto held_out_errors = [&](auto same_group) {
    std::vector<double> errors;
    for (int64_t i = 0; i < n; ++i) {
      double sum = 0;
      int64_t count = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (!same_group(i, j)) {
          sum += log_ratio(j);
          ++count;
        }
      }
      if (count == 0) return std::vector<double>{};
      errors.push_back(std::exp(sum / count - log_ratio(i)) - 1);
    }
    return errors;
  };
  std::vector<double> loo = held_out_errors([](int64_t i, int64_t j) { return i == j; });
  std::vector<double> logo = held_out_errors(
      [&](int64_t i, int64_t j) { return data.info[i].gpu == data.info[j].gpu; });
  if (held_out_log_ratios != nullptr) {
    held_out_log_ratios->assign(n, 0);
    if (n > 1) {
      for (int64_t i = 0; i < n; ++i) {
        (*held_out_log_ratios)[i] =
            (total - log_ratio(i)) / static_cast<double>(n - 1) - total / static_cast<double>(n);
      }
    }
  }

  FittedModel model;
  model.level = 2;
  model.target = "iteration_ms";
  model.scope = std::string(scope);
  model.reduced = true;
  model.regression.relative_weights = true;
  model.scoring = Scoring::kMape;
  model.features = {"level1_ms"};
  model.feature_min = {data.x.col(0).minCoeff()};
  model.feature_max = {data.x.col(0).maxCoeff()};
  model.fit.mean = {0};
  model.fit.scale = {1};
  model.fit.coefficients = {std::exp(total / n)};
  model.fit.intercept = 0;
  double mape = 0;
  for (double e : loo) mape += std::abs(e);
  model.cv_mape = model.cv_loss = mape / loo.size();
  model.cv_error_quantiles = ErrorQuantiles(loo);
  model.transfer_error_quantiles = ErrorQuantiles(logo);
  Describe(data, options, model);
  return model;
}

// Selects features by CV, refits on all rows, and records the CV error;
// each row's signed relative held-out error into `cv_errors` when given (and
// the model was selected by CV). Each row's log(answer of the model fitted
// without it / answer of the model fitted on every row) into
// `held_out_log_ratios` when given (0 where either answer is not positive):
// how far an answer for a workload the fit never saw moves from the in-sample
// one. Each row's leave-one-GPU-out error into `transfer_errors` when given
// (none when the rows come from one GPU).
absl::StatusOr<FittedModel> FitOne(const Dataset& data, const FitOptions& options, int level,
                                   absl::string_view scope, bool non_negative, Loss loss,
                                   std::vector<std::string>& notes,
                                   std::vector<double>* cv_errors = nullptr,
                                   std::vector<double>* held_out_log_ratios = nullptr,
                                   ErrorsByProfile* transfer_errors = nullptr) {
  const std::string name = absl::StrCat("level", level, "/", scope);
  if (data.y.size() == 0) return absl::FailedPreconditionError(absl::StrCat(name, ": no rows"));
  absl::StatusOr<std::vector<int>> folds = MakeFolds(data, options, notes, name);
  if (!folds.ok() && level == 2) {
    // Too few whole-model rows to select features: one ratio instead.
    absl::StatusOr<FittedModel> ratio = FitRatio(data, options, scope, held_out_log_ratios);
    if (ratio.ok()) {
      notes.push_back(absl::StrCat(name, ": ", data.y.size(),
                                   " rows are too few to select features; level1_ms times one "
                                   "ratio, errors from leave-one-out"));
    }
    return ratio;
  }
  if (!folds.ok()) return folds.status();
  RegressionOptions regression;
  regression.ridge = options.ridge;
  regression.non_negative = non_negative;
  regression.relative_weights = true;
  regression.loss = loss;
  ASSIGN_OR_RETURN(CrossValidator cv, CrossValidator::Create(data.x, data.y, *folds, regression));
  SfsOptions sfs;
  sfs.max_features = options.max_features;
  sfs.min_improvement = options.min_improvement;
  sfs.scoring = options.scoring;
  if (level == 2 && !data.feature_names.empty() && data.feature_names.front() == "level1_ms") {
    sfs.forced = {0};
  }
  if (absl::StatusOr<models::OpClass> op_class = ParseOpClassKey(scope); level == 1 && op_class.ok()) {
    for (absl::string_view required : RequiredFeatures(*op_class)) {
      auto it = std::find(data.feature_names.begin(), data.feature_names.end(), required);
      if (it != data.feature_names.end()) sfs.forced.push_back(it - data.feature_names.begin());
    }
  }
  ASSIGN_OR_RETURN(SfsResult selection, SelectForward(cv, sfs));

  FittedModel model;
  model.level = level;
  model.target = level == 1 ? "call_ms" : "iteration_ms";
  model.scope = std::string(scope);
  model.regression = regression;
  model.scoring = options.scoring;
  model.cv_loss = selection.loss;
  const std::vector<int>& selected = selection.selected;
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

  ASSIGN_OR_RETURN(Eigen::VectorXd held_out, cv.HeldOutPredictions(selected));
  std::vector<double> errors(data.y.size());
  double mape = 0;
  for (Eigen::Index i = 0; i < data.y.size(); ++i) {
    errors[i] = (held_out(i) - data.y(i)) / data.y(i);
    mape += std::abs(errors[i]);
  }
  model.cv_mape = mape / data.y.size();
  if (cv_errors != nullptr) *cv_errors = errors;
  if (held_out_log_ratios != nullptr) {
    held_out_log_ratios->assign(data.y.size(), 0);
    std::vector<double> row(selected.size());
    for (Eigen::Index i = 0; i < data.y.size(); ++i) {
      for (Eigen::Index a = 0; a < x.cols(); ++a) row[a] = x(i, a);
      const double in_sample = model.fit.Predict(row);
      if (in_sample > 0 && held_out(i) > 0 && std::isfinite(held_out(i))) {
        (*held_out_log_ratios)[i] = std::log(held_out(i) / in_sample);
      }
    }
  }
  const std::vector<double> transfer = TransferErrors(data, regression, selected);
  if (transfer_errors != nullptr) {
    for (size_t i = 0; i < transfer.size(); ++i) {
      (*transfer_errors)[data.info[i].profile_index] = transfer[i];
    }
  }
  SetRegimeQuantiles(data, errors, transfer, model);
  model.cv_error_quantiles = ErrorQuantiles(std::move(errors));
  model.transfer_error_quantiles = ErrorQuantiles(transfer);
  Describe(data, options, model);
  return model;
}

}  // namespace

std::string FamilyScope(absl::string_view family, models::Phase phase) {
  return absl::StrCat(family, "/", models::PhaseName(phase));
}

namespace {

// The rows of `data` whose indices are `rows` (every row when null), with
// the columns whose names `keep` accepts, in the order they had.
Dataset SubsetOf(const Dataset& data, const std::vector<Eigen::Index>* rows,
                 absl::FunctionRef<bool(absl::string_view)> keep) {
  std::vector<Eigen::Index> columns;
  Dataset out;
  for (size_t c = 0; c < data.feature_names.size(); ++c) {
    if (!keep(data.feature_names[c])) continue;
    columns.push_back(static_cast<Eigen::Index>(c));
    out.feature_names.push_back(data.feature_names[c]);
  }
  const Eigen::Index n = rows == nullptr ? data.y.size() : static_cast<Eigen::Index>(rows->size());
  out.x.resize(n, static_cast<Eigen::Index>(columns.size()));
  out.y.resize(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const Eigen::Index row = rows == nullptr ? r : (*rows)[r];
    for (size_t c = 0; c < columns.size(); ++c) {
      out.x(r, static_cast<Eigen::Index>(c)) = data.x(row, columns[c]);
    }
    out.y(r) = data.y(row);
    out.info.push_back(data.info[row]);
  }
  return out;
}

// The rows of `data` whose indices are `rows`, with only its time-like
// features (ms, in the order they had) but the input copy: a family's few
// rows, often of one GPU, cannot tell a per-sample or per-layer constant
// from a rate, and only times scale with the GPU a prediction is for.
Dataset TimeFeaturesOfRows(const Dataset& data, const std::vector<Eigen::Index>& rows) {
  // The input copy is a time too, but a decoder's token ids make it a
  // near-zero column whose coefficient can only stand in for tokens.
  return SubsetOf(data, &rows, [](absl::string_view name) {
    return absl::EndsWith(name, "_ms") && name != "h2d_ms";
  });
}

// Level-2 models of the families with enough rows in `data` (one phase),
// each kept only where its cross-validated MAPE beats the global model's on
// the same rows (`global_errors`, per row of `data`). A family's model that
// cannot be fitted, or does not beat the global one, is noted and left out:
// the global one serves that family. A kept family's rows take its model's
// held-out log ratios (FitOne) in `held_out_log_ratios` (per row of `data`);
// each kept model's leave-one-GPU-out errors go to `transfer`, by its scope.
void FitFamilyModels(const Dataset& data, models::Phase phase, const FitOptions& options,
                     const FitOptions& fit_options, absl::Span<const double> global_errors,
                     PredictorModel& model, std::vector<double>& held_out_log_ratios,
                     std::map<std::string, ErrorsByProfile>& transfer) {
  if (options.family_min_rows <= 0 || global_errors.size() != data.info.size()) return;
  std::map<std::string, std::vector<Eigen::Index>> rows_of;
  for (size_t i = 0; i < data.info.size(); ++i) {
    rows_of[data.info[i].family].push_back(static_cast<Eigen::Index>(i));
  }
  FitOptions family_options = fit_options;
  family_options.max_features = std::min(options.max_features, options.family_max_features);
  for (const auto& [family, rows] : rows_of) {
    if (static_cast<int>(rows.size()) < options.family_min_rows) continue;
    const std::string scope = FamilyScope(family, phase);
    std::vector<double> family_log_ratios;
    ErrorsByProfile family_transfer;
    absl::StatusOr<FittedModel> fitted = FitOne(TimeFeaturesOfRows(data, rows), family_options,
                                                2, scope, options.level2_non_negative,
                                                options.level2_loss, model.notes, nullptr,
                                                &family_log_ratios, &family_transfer);
    if (!fitted.ok()) {
      model.notes.push_back(absl::StrCat("level2/", scope, ": ", fitted.status().message(),
                                         "; the global model serves it"));
      continue;
    }
    double global_mape = 0;
    for (Eigen::Index row : rows) global_mape += std::abs(global_errors[row]);
    global_mape /= static_cast<double>(rows.size());
    if (fitted->reduced || !(fitted->cv_mape < global_mape)) {
      model.notes.push_back(absl::StrFormat(
          "level2/%s: its own model (CV MAPE %.1f%%) does not beat the global one on its "
          "rows (%.1f%%); the global model serves it",
          scope, 100 * fitted->cv_mape, 100 * global_mape));
      continue;
    }
    // The global model's held-out errors on the family's rows: the least
    // scatter its band may show (FittedModel::reference_error_quantiles).
    std::vector<double> reference;
    reference.reserve(rows.size());
    for (Eigen::Index row : rows) reference.push_back(global_errors[row]);
    fitted->reference_error_quantiles = ErrorQuantiles(std::move(reference));
    model.level2_by_family[scope] = *std::move(fitted);
    for (size_t r = 0; r < rows.size(); ++r) held_out_log_ratios[rows[r]] = family_log_ratios[r];
    transfer[scope] = std::move(family_transfer);
  }
}

}  // namespace

absl::StatusOr<PredictorModel> FitDescribed(absl::Span<const DescribedProfile> profiles,
                                            const std::map<std::string, models::Node>& given_nodes,
                                            const FitOptions& options) {
  if (options.folds < 2 || options.max_features < 1 || !(options.ridge >= 0)) {
    return absl::InvalidArgumentError("fit: need folds >= 2, max_features >= 1, ridge >= 0");
  }
  if (profiles.empty()) return absl::FailedPreconditionError("fit: no profiles to fit on");
  PredictorModel model;
  model.created_at_us = options.created_at_us != 0 ? options.created_at_us : NowUs();
  FitOptions fit_options = options;
  fit_options.created_at_us = model.created_at_us;
  // Rates the training profiles themselves show stand in for missing agent
  // measurements, here and at prediction.
  model.profile_rates = RatesFromProfiles(profiles, given_nodes);
  std::map<std::string, models::Node> nodes;
  for (const auto& [name, node] : given_nodes) {
    nodes[name] = WithProfileRates(node, model.profile_rates);
  }
  // Efficiencies come from the nodes the profiles ran on, not from every
  // registered node: a held-out GPU's measurements must not shape them.
  std::set<std::string> profiled;
  for (const DescribedProfile& p : profiles) profiled.insert(p.profile.node_name);
  std::vector<const models::Node*> node_list;
  for (const auto& [name, node] : nodes) {
    if (profiled.contains(name)) node_list.push_back(&node);
  }
  model.efficiencies = LearnEfficiencies(node_list);
  model.rate_spread = LeaveOneOutRateSpread(node_list);
  std::set<std::string> vendors, power_classes;
  for (const models::Node* node : node_list) {
    if (!node->gpu.vendor.empty()) vendors.insert(node->gpu.vendor);
    const std::string power_class = PowerClass(node->gpu.tdp_watts);
    if (!power_class.empty()) power_classes.insert(power_class);
  }
  model.training_vendors.assign(vendors.begin(), vendors.end());
  model.training_power_classes.assign(power_classes.begin(), power_classes.end());
  const std::vector<HeldOutArchitecture> held_out_architectures =
      HeldOutArchitectures(profiles, given_nodes, node_list, model);
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
    ASSIGN_OR_RETURN(auto datasets, BuildOperationDatasets(profiles, nodes, model.efficiencies));
    std::map<models::OpClass, ErrorsByProfile> transfer;
    for (const auto& [op_class, data] : datasets) {
      absl::StatusOr<FittedModel> fitted =
          FitOne(data, fit_options, 1, OpClassKey(op_class), options.level1_non_negative,
                 options.level1_loss, model.notes, nullptr, nullptr,
                 &transfer[op_class]);
      if (fitted.ok()) {
        model.level1[op_class] = *std::move(fitted);
      } else {
        model.notes.push_back(std::string(fitted.status().message()));
      }
    }
    CalibrateLevel1Scales(held_out_architectures, nodes, transfer, model);
  }
  // Per profile: log(its answer out of fold / in sample) of the level-2
  // model that serves it (0 where none does: level 1 never sees whole runs).
  std::vector<double> held_out_log_ratios(profiles.size(), 0);
  if (options.fit_level2) {
    // Level 1 is fitted and stays as it is: its sums at each run's rates
    // are the ones a prediction makes.
    std::optional<Level1Plan> plan;
    Level1Fn level1;
    if (!model.level1.empty()) {
      plan.emplace(model);
      level1 = [&plan](const models::WorkloadDescriptor& descriptor,
                       const EffectiveRates& rates) {
        return plan->Sum(PreparedWorkload(descriptor), rates);
      };
    }
    std::vector<FittedModel*> unlearned_scales;
    for (models::Phase phase : {models::Phase::kTrain, models::Phase::kInference}) {
      absl::StatusOr<Dataset> data =
          BuildWorkloadDataset(profiles, nodes, model.efficiencies, phase, level1);
      if (data.status().code() == absl::StatusCode::kFailedPrecondition) continue;  // none
      if (!data.ok()) return data.status();
      std::vector<double> global_errors, log_ratios;
      ErrorsByProfile global_transfer;
      std::map<std::string, ErrorsByProfile> family_transfer;
      absl::StatusOr<FittedModel> fitted =
          FitOne(SubsetOf(*data, nullptr, IsGlobalLevel2Candidate), fit_options, 2,
                 models::PhaseName(phase), options.level2_non_negative, options.level2_loss,
                 model.notes, &global_errors, &log_ratios, &global_transfer);
      if (fitted.ok()) {
        model.level2[phase] = *std::move(fitted);
      } else {
        model.notes.push_back(std::string(fitted.status().message()));
        log_ratios.assign(data->info.size(), 0);
      }
      FitFamilyModels(*data, phase, options, fit_options, global_errors, model, log_ratios,
                      family_transfer);
      for (size_t i = 0; i < data->info.size(); ++i) {
        held_out_log_ratios[data->info[i].profile_index] = log_ratios[i];
      }
      CalibrateLevel2Scales(held_out_architectures, nodes, phase, level1, global_transfer,
                            family_transfer, model, unlearned_scales);
    }
    ShareLevel2Scale(model, unlearned_scales);
  }
  if (model.level1.empty() && model.level2.empty()) {
    std::string why = "fit: no model could be fitted";
    for (const std::string& note : model.notes) absl::StrAppend(&why, "; ", note);
    if (model.notes.empty()) absl::StrAppend(&why, " (no operation or model profiles selected)");
    return absl::FailedPreconditionError(why);
  }
  if (options.calibrate_measured) {
    std::vector<DescribedProfile> runs;
    std::vector<double> run_log_ratios;
    for (size_t i = 0; i < profiles.size(); ++i) {
      const DescribedProfile& p = profiles[i];
      if (p.profile.workload.kind == models::WorkloadKind::kModel &&
          models::MeasuredByAgent(p.profile)) {
        runs.push_back(p);
        run_log_ratios.push_back(held_out_log_ratios[i]);
      }
    }
    RETURN_IF_ERROR(CalibrateMeasured(model, runs, run_log_ratios, given_nodes));
  }
  if (options.calibrate) {
    std::vector<DescribedProfile> runs;
    for (const DescribedProfile& p : profiles) {
      if (p.profile.workload.kind == models::WorkloadKind::kModel &&
          !models::MeasuredByAgent(p.profile)) {
        runs.push_back(p);
      }
    }
    RETURN_IF_ERROR(Calibrate(model, runs, given_nodes));
  }
  return model;
}

}  // namespace perfcast::predictor

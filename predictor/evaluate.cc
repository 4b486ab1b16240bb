#include "predictor/evaluate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/quantile.h"
#include "base/status_macros.h"
#include "predictor/folds.h"
#include "predictor/pricing_plan.h"

namespace perfcast::predictor {
namespace {

void Add(ErrorSummary& summary, double relative_error, bool covered) {
  // Running means: the summary is final after every point.
  ++summary.count;
  summary.mape += (std::abs(relative_error) - summary.mape) / summary.count;
  summary.bias += (relative_error - summary.bias) / summary.count;
  summary.coverage += ((covered ? 1.0 : 0.0) - summary.coverage) / summary.count;
}

// The median signed error of every group, from the report's points (a
// running summary cannot hold a median).
void SetMedianBias(EvaluationReport& report) {
  struct Groups {
    std::vector<double> overall;
    std::map<std::string, std::vector<double>> gpu, family, precision, phase, op_class;
  };
  Groups groups[2];
  for (const EvaluatedPoint& p : report.points) {
    Groups& g = groups[p.level == 1 ? 0 : 1];
    const double error = (p.predicted_ms - p.measured_ms) / p.measured_ms;
    g.overall.push_back(error);
    g.gpu[p.gpu].push_back(error);
    g.family[p.family].push_back(error);
    g.precision[p.precision].push_back(error);
    g.phase[p.phase].push_back(error);
    if (!p.op_class.empty()) g.op_class[p.op_class].push_back(error);
  }
  auto set = [&](std::map<std::string, ErrorSummary>& summaries,
                 const std::map<std::string, std::vector<double>>& errors) {
    for (auto& [name, summary] : summaries) summary.median_bias = Quantile(errors.at(name), 0.5);
  };
  for (int level = 0; level < 2; ++level) {
    LevelReport& out = level == 0 ? report.level1 : report.level2;
    const Groups& g = groups[level];
    out.overall.median_bias = Quantile(g.overall, 0.5);
    set(out.by_gpu, g.gpu);
    set(out.by_family, g.family);
    set(out.by_precision, g.precision);
    set(out.by_phase, g.phase);
    set(out.by_class, g.op_class);
  }
}

void Record(const EvaluatedPoint& point, EvaluationReport& report) {
  LevelReport& level = point.level == 1 ? report.level1 : report.level2;
  const double error = (point.predicted_ms - point.measured_ms) / point.measured_ms;
  const bool covered = point.lo_ms <= point.measured_ms && point.measured_ms <= point.hi_ms;
  Add(level.overall, error, covered);
  Add(level.by_gpu[point.gpu], error, covered);
  Add(level.by_family[point.family], error, covered);
  Add(level.by_precision[point.precision], error, covered);
  Add(level.by_phase[point.phase], error, covered);
  if (!point.op_class.empty()) Add(level.by_class[point.op_class], error, covered);
  report.points.push_back(point);
}

// `node` with the host a profile measured during its run (launch latency,
// dispatch rate, copy bandwidth) in place of the node's stored figures, as
// the fit saw the profile (dataset.cc): a held-out step is predicted for the
// host it ran on, not for whichever run last wrote the node's measurements.
models::Node AsRun(models::Node node, const models::RunConditions& conditions) {
  auto take = [](std::optional<double>& to, const std::optional<double>& from) {
    if (from.value_or(0) > 0) to = from;
  };
  take(node.measured.launch_latency_us, conditions.launch_latency_us);
  take(node.measured.dispatch_ops_per_s, conditions.dispatch_ops_per_s);
  if (conditions.h2d_pageable_gbs.value_or(0) > 0 || conditions.h2d_pinned_gbs.value_or(0) > 0) {
    // Both from the run: the rates prefer pageable, as WithRunConditions does.
    node.measured.h2d_pageable_gbs = conditions.h2d_pageable_gbs;
    node.measured.h2d_pinned_gbs = conditions.h2d_pinned_gbs;
  }
  take(node.measured.cpu_single_thread_score, conditions.cpu_single_thread_score);
  return node;
}

// Predicts profile `index` of `profiles` on `node` with `model` and records
// it, or notes why it could not.
void PredictAndRecord(const PredictorModel& model, absl::Span<const DescribedProfile> profiles,
                      size_t index, size_t reported_index, const models::Node& node,
                      EvaluationReport& report) {
  const DescribedProfile& p = profiles[index];
  EvaluatedPoint point;
  point.profile_index = reported_index;
  point.gpu = node.gpu.model;
  point.family = p.profile.workload.family;
  point.precision = std::string(models::PrecisionName(p.profile.workload.precision));
  point.phase = std::string(models::PhaseName(p.profile.workload.phase));
  point.measured_ms = p.profile.iteration.mean_ms;
  const bool operation = p.profile.workload.kind == models::WorkloadKind::kOperation;
  point.level = operation ? 1 : 2;
  if (operation) {
    if (p.descriptor.operations.empty()) return;
    point.op_class = std::string(OpClassKey(p.descriptor.operations.front().op_class));
  }
  // Priced as the loop that measured it ran: a user's or the plain loop's
  // Python loop is not the agent's C++ one.
  absl::StatusOr<Prediction> prediction =
      PricingPlan(model, node).Predict(p.descriptor, models::MeasuredLoop(p.profile));
  if (!prediction.ok() || !(point.measured_ms > 0)) {
    report.notes.push_back(absl::StrCat("profile ", p.profile.id, ": ",
                                        prediction.ok() ? "no measured time"
                                                        : prediction.status().message()));
    return;
  }
  point.predicted_ms = prediction->iteration_ms;
  point.lo_ms = prediction->lo_ms;
  point.hi_ms = prediction->hi_ms;
  point.method = std::string(MethodName(prediction->method));
  Record(point, report);
}

absl::StatusOr<std::string> GpuOf(const DescribedProfile& p,
                                  const std::map<std::string, models::Node>& nodes) {
  auto node = nodes.find(p.profile.node_name);
  if (node == nodes.end()) {
    return absl::InvalidArgumentError(absl::StrCat("evaluate: profile ", p.profile.id,
                                                   " on unknown node '", p.profile.node_name,
                                                   "'"));
  }
  return node->second.gpu.model;
}

absl::Status NothingPredicted(const EvaluationReport& report) {
  constexpr size_t kShownNotes = 3;
  std::string why = "evaluate: no held-out profile could be predicted";
  for (size_t i = 0; i < report.notes.size() && i < kShownNotes; ++i) {
    absl::StrAppend(&why, "; ", report.notes[i]);
  }
  if (report.notes.size() > kShownNotes) {
    absl::StrAppend(&why, "; and ", report.notes.size() - kShownNotes, " more");
  }
  return absl::FailedPreconditionError(why);
}

// Splits `profiles` by the GPU lists and runs EvaluateTransfer; reported
// profile indices are positions in `profiles`.
absl::StatusOr<EvaluationReport> TrainTestGpus(absl::Span<const DescribedProfile> profiles,
                                               const std::map<std::string, models::Node>& nodes,
                                               const EvaluateOptions& options) {
  if (options.train_gpus.empty() || options.test_gpus.empty()) {
    return absl::InvalidArgumentError(
        "evaluate: the train/test protocol needs at least one training and one test GPU");
  }
  const std::set<std::string> train_set(options.train_gpus.begin(), options.train_gpus.end());
  const std::set<std::string> test_set(options.test_gpus.begin(), options.test_gpus.end());
  for (const std::string& gpu : test_set) {
    if (train_set.contains(gpu)) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluate: GPU '", gpu, "' is both a training and a test GPU"));
    }
  }
  std::set<std::string> known;
  for (const auto& [name, node] : nodes) known.insert(node.gpu.model);
  for (const std::vector<std::string>* list : {&options.train_gpus, &options.test_gpus}) {
    for (const std::string& gpu : *list) {
      if (!known.contains(gpu)) {
        return absl::InvalidArgumentError(
            absl::StrCat("evaluate: unknown GPU '", gpu, "': no registered node has it"));
      }
    }
  }
  std::vector<DescribedProfile> train, test;
  std::vector<size_t> test_index;
  std::set<std::string> seen;
  for (size_t i = 0; i < profiles.size(); ++i) {
    ASSIGN_OR_RETURN(std::string gpu, GpuOf(profiles[i], nodes));
    seen.insert(gpu);
    if (train_set.contains(gpu)) {
      train.push_back(profiles[i]);
    } else if (test_set.contains(gpu)) {
      test.push_back(profiles[i]);
      test_index.push_back(i);
    }
  }
  std::vector<std::string> missing;
  for (const std::set<std::string>* set : {&train_set, &test_set}) {
    for (const std::string& gpu : *set) {
      if (!seen.contains(gpu)) missing.push_back(gpu);
    }
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("evaluate: no selected profile ran on GPU ",
                                                   absl::StrJoin(missing, ", ")));
  }
  ASSIGN_OR_RETURN(EvaluationReport report, EvaluateTransfer(train, test, nodes, options.fit));
  for (EvaluatedPoint& point : report.points) point.profile_index = test_index[point.profile_index];
  return report;
}

}  // namespace

absl::StatusOr<EvaluationReport> EvaluateTransfer(absl::Span<const DescribedProfile> train,
                                                  absl::Span<const DescribedProfile> test,
                                                  const std::map<std::string, models::Node>& nodes,
                                                  const FitOptions& options) {
  std::set<std::string> train_gpus;
  for (const DescribedProfile& p : train) {
    ASSIGN_OR_RETURN(std::string gpu, GpuOf(p, nodes));
    train_gpus.insert(gpu);
  }
  for (const DescribedProfile& p : test) {
    ASSIGN_OR_RETURN(std::string gpu, GpuOf(p, nodes));
    if (train_gpus.contains(gpu)) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluate: GPU '", gpu, "' has both training and test rows"));
    }
  }
  if (test.empty()) return absl::FailedPreconditionError("evaluate: no test profiles");
  EvaluationReport report;
  absl::StatusOr<PredictorModel> model = FitDescribed(train, nodes, options);
  if (model.status().code() == absl::StatusCode::kInvalidArgument) return model.status();
  if (!model.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("evaluate: fit on the training GPUs: ", model.status().message()));
  }
  for (size_t i = 0; i < test.size(); ++i) {
    // The unseen GPU as a spec sheet describes it: nothing measured on it.
    models::Node node = nodes.at(test[i].profile.node_name);
    node.measured = models::MeasuredRates{};
    PredictAndRecord(*model, test, i, i, node, report);
  }
  if (report.points.empty()) return NothingPredicted(report);
  SetMedianBias(report);
  report.notes.insert(report.notes.end(), model->notes.begin(), model->notes.end());
  report.fitted = *std::move(model);
  return report;
}

absl::StatusOr<EvaluationReport> EvaluateDescribed(absl::Span<const DescribedProfile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   const EvaluateOptions& options) {
  if (profiles.empty()) return absl::FailedPreconditionError("evaluate: no profiles");
  if (options.split == Split::kTrainTestGpus) return TrainTestGpus(profiles, nodes, options);
  // split_of[i]: the split in which profile i is held out; -1: always trains.
  std::vector<int> split_of(profiles.size(), -1);
  int splits = 0;
  std::vector<std::string> report_notes;
  switch (options.split) {
    case Split::kRandomKFold: {
      ASSIGN_OR_RETURN(split_of, RandomFolds(profiles.size(), options.folds, options.seed));
      splits = options.folds;
      break;
    }
    case Split::kLeaveOneGpuOut: {
      std::vector<std::string> gpus;
      for (const DescribedProfile& p : profiles) {
        ASSIGN_OR_RETURN(std::string gpu, GpuOf(p, nodes));
        gpus.push_back(gpu);
      }
      ASSIGN_OR_RETURN(split_of, LeaveOneGroupOutFolds(gpus));
      splits = *CountFolds(split_of);
      break;
    }
    case Split::kHeldOutSizes:
      for (size_t i = 0; i < profiles.size(); ++i) {
        if (profiles[i].profile.workload.kind == models::WorkloadKind::kModel &&
            profiles[i].descriptor.inner_modules > options.size_threshold) {
          split_of[i] = 0;
        }
      }
      splits = 1;
      break;
    case Split::kLargestSizePerFamily: {
      std::map<std::string, std::set<double>> sizes;
      for (const DescribedProfile& p : profiles) {
        if (p.profile.workload.kind != models::WorkloadKind::kModel) continue;
        sizes[p.profile.workload.family].insert(p.descriptor.parameters);
      }
      for (size_t i = 0; i < profiles.size(); ++i) {
        const DescribedProfile& p = profiles[i];
        if (p.profile.workload.kind != models::WorkloadKind::kModel) continue;
        const std::set<double>& family = sizes[p.profile.workload.family];
        if (family.size() > 1 && p.descriptor.parameters == *family.rbegin()) split_of[i] = 0;
      }
      std::vector<std::string> single;
      for (const auto& [family, values] : sizes) {
        if (values.size() == 1) single.push_back(family);
      }
      if (!single.empty()) {
        report_notes.push_back(absl::StrCat("measured at one size only, not held out: ",
                                            absl::StrJoin(single, ", ")));
      }
      splits = 1;
      break;
    }
    case Split::kTrainTestGpus:
      break;
  }

  EvaluationReport report;
  report.notes = std::move(report_notes);
  for (int s = 0; s < splits; ++s) {
    std::vector<DescribedProfile> train;
    std::vector<size_t> test;
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (split_of[i] == s) {
        test.push_back(i);
      } else {
        train.push_back(profiles[i]);
      }
    }
    if (test.empty()) continue;
    absl::StatusOr<PredictorModel> model = FitDescribed(train, nodes, options.fit);
    if (model.status().code() == absl::StatusCode::kInvalidArgument) return model.status();
    if (!model.ok()) {
      report.notes.push_back(absl::StrCat("split ", s, ": ", model.status().message()));
      continue;
    }
    for (size_t i : test) {
      PredictAndRecord(*model, profiles, i, i,
                       AsRun(nodes.at(profiles[i].profile.node_name), profiles[i].profile.conditions),
                       report);
    }
  }
  if (report.points.empty()) return NothingPredicted(report);
  SetMedianBias(report);
  return report;
}

}  // namespace perfcast::predictor

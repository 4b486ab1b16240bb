#include "predictor/evaluate.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "predictor/folds.h"

namespace perfcast::predictor {
namespace {

void Add(ErrorSummary& summary, double relative_error) {
  // Running mean: the summary is final after every point.
  ++summary.count;
  summary.mape += (std::abs(relative_error) - summary.mape) / summary.count;
}

void Record(const EvaluatedPoint& point, EvaluationReport& report) {
  LevelReport& level = point.level == 1 ? report.level1 : report.level2;
  const double error = (point.predicted_ms - point.measured_ms) / point.measured_ms;
  Add(level.overall, error);
  Add(level.by_gpu[point.gpu], error);
  Add(level.by_family[point.family], error);
  Add(level.by_precision[point.precision], error);
  report.points.push_back(point);
}

}  // namespace

absl::StatusOr<EvaluationReport> EvaluateDescribed(absl::Span<const DescribedProfile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   const EvaluateOptions& options) {
  if (profiles.empty()) return absl::FailedPreconditionError("evaluate: no profiles");
  // split_of[i]: the split in which profile i is held out; -1: always trains.
  std::vector<int> split_of(profiles.size(), -1);
  int splits = 0;
  std::vector<std::string> report_notes;
  switch (options.split) {
    case Split::kRandomKFold: {
      absl::StatusOr<std::vector<int>> folds =
          RandomFolds(profiles.size(), options.folds, options.seed);
      if (!folds.ok()) return folds.status();
      split_of = *folds;
      splits = options.folds;
      break;
    }
    case Split::kLeaveOneGpuOut: {
      std::vector<std::string> gpus;
      for (const DescribedProfile& p : profiles) {
        auto node = nodes.find(p.profile.node_name);
        if (node == nodes.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("evaluate: profile ", p.profile.id, " on unknown node '",
                           p.profile.node_name, "'"));
        }
        gpus.push_back(node->second.gpu.model);
      }
      absl::StatusOr<std::vector<int>> folds = LeaveOneGroupOutFolds(gpus);
      if (!folds.ok()) return folds.status();
      split_of = *folds;
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
      const DescribedProfile& p = profiles[i];
      const models::Node& node = nodes.at(p.profile.node_name);
      EvaluatedPoint point;
      point.profile_index = i;
      point.gpu = node.gpu.model;
      point.family = p.profile.workload.family;
      point.precision = std::string(models::PrecisionName(p.profile.workload.precision));
      point.measured_ms = p.profile.iteration.mean_ms;
      absl::StatusOr<double> predicted;
      if (p.profile.workload.kind == models::WorkloadKind::kOperation) {
        point.level = 1;
        if (p.descriptor.operations.empty()) continue;
        predicted = PredictOperation(*model, p.descriptor.operations.front(), node);
      } else {
        point.level = 2;
        absl::StatusOr<Prediction> prediction = PredictDescribed(*model, p.descriptor, node);
        predicted = prediction.ok() ? absl::StatusOr<double>(prediction->iteration_ms)
                                    : absl::StatusOr<double>(prediction.status());
        if (prediction.ok()) {
          point.predicted_low_ms = prediction->lo_ms;
          point.predicted_high_ms = prediction->hi_ms;
        }
      }
      if (!predicted.ok() || !(point.measured_ms > 0)) {
        report.notes.push_back(absl::StrCat("profile ", p.profile.id, ": ",
                                            predicted.ok() ? "no measured time"
                                                           : predicted.status().message()));
        continue;
      }
      point.predicted_ms = *predicted;
      Record(point, report);
    }
  }
  if (report.points.empty()) {
    std::string why = "evaluate: no held-out profile could be predicted";
    for (const std::string& note : report.notes) absl::StrAppend(&why, "; ", note);
    return absl::FailedPreconditionError(why);
  }
  return report;
}

}  // namespace perfcast::predictor

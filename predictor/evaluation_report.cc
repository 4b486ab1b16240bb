#include "predictor/evaluation_report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "nlohmann/json.hpp"
#include "predictor/selection.h"
#include "predictor/summary.h"

namespace perfcast::predictor {
namespace {

nlohmann::json ToJson(const ErrorSummary& s) {
  return {{"rows", s.count},
          {"mape", s.mape},
          {"bias", s.median_bias},
          {"mean_bias", s.bias},
          {"coverage", s.coverage}};
}

nlohmann::json ToJson(const LevelReport& report) {
  auto groups = [](const std::map<std::string, ErrorSummary>& in) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [group, s] : in) out[group] = ToJson(s);
    return out;
  };
  return {{"overall", ToJson(report.overall)},
          {"by_gpu", groups(report.by_gpu)},
          {"by_family", groups(report.by_family)},
          {"by_precision", groups(report.by_precision)},
          {"by_phase", groups(report.by_phase)},
          {"by_class", groups(report.by_class)}};
}

}  // namespace

absl::string_view SplitName(Split split) {
  switch (split) {
    case Split::kRandomKFold: return "kfold";
    case Split::kLeaveOneGpuOut: return "gpu";
    case Split::kHeldOutSizes: return "sizes";
    case Split::kLargestSizePerFamily: return "largest-size-per-family";
    case Split::kTrainTestGpus: return "train-test-gpus";
  }
  return "unknown";
}

absl::StatusOr<EvaluationResult> EvaluateAndReport(std::vector<models::Profile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   EvaluateOptions options,
                                                   const SelectionInfo& selection,
                                                   const KeepGoing& keep_going) {
  std::vector<DescribedProfile> described;
  described.reserve(profiles.size());
  std::vector<int64_t> sizes;
  for (models::Profile& p : profiles) {
    p.workload = models::MeasuredWorkload(p);
    absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(p.workload);
    if (!d.ok()) {
      return absl::Status(d.status().code(),
                          absl::StrCat("evaluate: profile ", p.id, ": ", d.status().message()));
    }
    if (p.workload.kind == models::WorkloadKind::kModel) sizes.push_back(d->inner_modules);
    described.push_back({std::move(p), *std::move(d)});
  }
  EvaluationResult result;
  const bool size_split =
      options.split == Split::kHeldOutSizes || options.split == Split::kLargestSizePerFamily;
  if (size_split && sizes.empty()) {
    return absl::FailedPreconditionError(
        "evaluate: held-out sizes needs model profiles; the selection has none");
  }
  if (options.split == Split::kHeldOutSizes) {
    if (options.size_threshold == 0) {
      std::nth_element(sizes.begin(), sizes.begin() + sizes.size() / 2, sizes.end());
      options.size_threshold = sizes[sizes.size() / 2];
    }
    result.size_threshold = options.size_threshold;
  }
  ASSIGN_OR_RETURN(EvaluationReport report, EvaluateDescribed(described, nodes, options));
  RETURN_IF_ERROR(keep_going());
  result.report = std::move(report);
  result.notes = result.report.notes;

  nlohmann::json points = nlohmann::json::array();
  result.workload_keys.reserve(result.report.points.size());
  for (const EvaluatedPoint& p : result.report.points) {
    result.workload_keys.push_back(described[p.profile_index].profile.workload.Key());
    points.push_back({{"level", p.level}, {"gpu", p.gpu}, {"family", p.family},
                      {"precision", p.precision}, {"phase", p.phase}, {"op_class", p.op_class},
                      {"method", p.method}, {"workload", result.workload_keys.back()},
                      {"measured_ms", p.measured_ms}, {"predicted_ms", p.predicted_ms},
                      {"lo_ms", p.lo_ms}, {"hi_ms", p.hi_ms}});
  }

  // The model the report shows: under the transfer protocol the one that
  // predicted the test GPUs (a fit on the whole selection would have seen
  // them); otherwise what a fit on the whole selection would serve.
  const bool transfer = options.split == Split::kTrainTestGpus;
  absl::StatusOr<PredictorModel> full =
      transfer ? absl::StatusOr<PredictorModel>(result.report.fitted)
               : FitDescribed(described, nodes, options.fit);
  RETURN_IF_ERROR(keep_going());
  nlohmann::json model_json = nullptr;
  if (full.ok()) {
    result.selected_features = SelectedFeatures(*full);
    absl::StatusOr<std::string> text = SerializeModel(*full);
    if (text.ok()) model_json = nlohmann::json::parse(*text, nullptr, false);
  } else {
    result.notes.push_back(absl::StrCat("full fit: ", full.status().message()));
  }
  result.notes.push_back(
      absl::StrCat("trained and evaluated on ", selection.method_note.empty()
                                                    ? MethodNote(selection.method_version)
                                                    : selection.method_note));
  nlohmann::json json = {
      {"split", std::string(SplitName(options.split))},
      {"size_threshold", options.size_threshold},
      {"selection", selection.description},
      {"profiles", described.size()},
      {"method_version", selection.method_version.has_value()
                             ? nlohmann::json(*selection.method_version)
                             : nlohmann::json(nullptr)},
      {"train_gpus", transfer ? options.train_gpus : std::vector<std::string>{}},
      {"test_gpus", transfer ? options.test_gpus : std::vector<std::string>{}},
      {"model_fitted_on", transfer ? "training GPUs" : "whole selection"},
      {"level1", ToJson(result.report.level1)},
      {"level2", ToJson(result.report.level2)},
      {"points", std::move(points)},
      {"notes", result.notes},
      {"selected_features", result.selected_features},
      {"model", std::move(model_json)},
  };
  result.report_json = json.dump();
  return result;
}

}  // namespace perfcast::predictor

#include "predictor/dataset.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "predictor/features.h"

namespace perfcast::predictor {
namespace {

absl::StatusOr<const models::Node*> FindNode(const DescribedProfile& described,
                                             const std::map<std::string, models::Node>& nodes) {
  auto it = nodes.find(described.profile.node_name);
  if (it == nodes.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile ", described.profile.id, " (", described.profile.workload.Key(),
        ") ran on unknown node '", described.profile.node_name, "'"));
  }
  if (!(described.profile.iteration.mean_ms > 0) ||
      !std::isfinite(described.profile.iteration.mean_ms)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile ", described.profile.id, " has mean time ", described.profile.iteration.mean_ms,
        " ms; a target must be positive"));
  }
  return &it->second;
}

RowInfo MakeInfo(const DescribedProfile& described, const models::Node& node, size_t index) {
  RowInfo info;
  info.node = node.name;
  info.gpu = node.gpu.model;
  info.architecture = node.gpu.architecture;
  info.family = described.profile.workload.family;
  info.precision = std::string(models::PrecisionName(described.profile.workload.precision));
  info.inner_modules = described.descriptor.inner_modules;
  info.profile_index = index;
  return info;
}

struct Pending {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  std::vector<RowInfo> info;
};

Dataset Assemble(std::vector<std::string> names, Pending pending) {
  Dataset data;
  data.feature_names = std::move(names);
  data.x.resize(pending.rows.size(), data.feature_names.size());
  data.y.resize(pending.rows.size());
  for (size_t i = 0; i < pending.rows.size(); ++i) {
    for (size_t j = 0; j < data.feature_names.size(); ++j) data.x(i, j) = pending.rows[i][j];
    data.y(i) = pending.y[i];
  }
  data.info = std::move(pending.info);
  return data;
}

}  // namespace

absl::StatusOr<std::map<models::OpClass, Dataset>> BuildOperationDatasets(
    absl::Span<const DescribedProfile> profiles,
    const std::map<std::string, models::Node>& nodes, const EfficiencyTable& efficiencies) {
  std::vector<std::string> inputs;
  for (const auto& [name, value] : OperationInputs(models::Operation{}, EffectiveRates{})) {
    inputs.push_back(name);
  }
  const std::vector<std::string> all_names = CandidateNames(OperationFeatureTable(), inputs);
  std::map<models::OpClass, std::vector<std::string>> class_names;
  std::map<models::OpClass, Pending> pending;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const DescribedProfile& described = profiles[i];
    if (described.profile.workload.kind != models::WorkloadKind::kOperation) continue;
    ASSIGN_OR_RETURN(const models::Node* node, FindNode(described, nodes));
    if (described.descriptor.operations.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "operation profile ", described.profile.id, " has no operation in its descriptor"));
    }
    ASSIGN_OR_RETURN(EffectiveRates node_rates, ResolveRates(*node, efficiencies));
    const EffectiveRates rates = WithRunConditions(node_rates, described.profile.conditions);
    const models::Operation& op = described.descriptor.operations.front();
    // Collective benchmarks calibrate links (collectives.h), not a roofline.
    if (op.op_class == models::OpClass::kCollective) continue;
    std::vector<std::string>& names = class_names[op.op_class];
    if (names.empty()) {
      for (const std::string& name : all_names) {
        if (IsCandidateFor(op.op_class, name)) names.push_back(name);
      }
    }
    ASSIGN_OR_RETURN(std::vector<double> row,
        EvaluateFeatures(OperationFeatureTable(), OperationInputs(op, rates), names));
    Pending& bucket = pending[op.op_class];
    bucket.rows.push_back(std::move(row));
    bucket.y.push_back(described.profile.iteration.mean_ms);
    bucket.info.push_back(MakeInfo(described, *node, i));
    bucket.info.back().load_regime = LoadRegime(op);
  }
  std::map<models::OpClass, Dataset> out;
  for (auto& [op_class, bucket] : pending) {
    out[op_class] = Assemble(class_names[op_class], std::move(bucket));
  }
  return out;
}

absl::StatusOr<Dataset> BuildWorkloadDataset(absl::Span<const DescribedProfile> profiles,
                                             const std::map<std::string, models::Node>& nodes,
                                             const EfficiencyTable& efficiencies,
                                             models::Phase phase, const Level1Fn& level1) {
  std::vector<std::string> inputs;
  for (const auto& [name, value] :
       WorkloadInputs(models::WorkloadDescriptor{}, EffectiveRates{})) {
    inputs.push_back(name);
  }
  if (level1) {
    inputs.push_back("level1_ms");
    inputs.push_back("level1_gpu_ms");
  }
  const std::vector<std::string> names = CandidateNames(WorkloadFeatureTable(), inputs);
  Pending pending;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const DescribedProfile& described = profiles[i];
    if (described.profile.workload.kind != models::WorkloadKind::kModel ||
        described.profile.workload.phase != phase) {
      continue;
    }
    ASSIGN_OR_RETURN(const models::Node* node, FindNode(described, nodes));
    ASSIGN_OR_RETURN(EffectiveRates node_rates, ResolveRates(*node, efficiencies));
    const EffectiveRates rates = WithRunConditions(node_rates, described.profile.conditions);
    FeatureInputs values = WorkloadInputs(described.descriptor, rates);
    if (level1) {
      ASSIGN_OR_RETURN(values["level1_ms"], level1(described.descriptor, rates));
      ASSIGN_OR_RETURN(values["level1_gpu_ms"], level1(described.descriptor, LaunchFree(rates)));
    }
    ASSIGN_OR_RETURN(std::vector<double> row,
        EvaluateFeatures(WorkloadFeatureTable(), values, names));
    pending.rows.push_back(std::move(row));
    pending.y.push_back(described.profile.iteration.mean_ms);
    pending.info.push_back(MakeInfo(described, *node, i));
  }
  if (pending.rows.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no model profiles in phase '", models::PhaseName(phase), "' to fit level 2 on"));
  }
  return Assemble(names, std::move(pending));
}

}  // namespace perfcast::predictor

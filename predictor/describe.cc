// The entry points that describe workloads with models::Describe. Kept apart
// from fit.cc so that code working from descriptors alone (tests,
// imports that carry their own) does not link the descriptor library.
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "predictor/evaluate.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"

namespace perfcast::predictor {
namespace {

absl::StatusOr<std::vector<DescribedProfile>> DescribeAll(
    absl::Span<const models::Profile> profiles) {
  std::vector<DescribedProfile> described;
  described.reserve(profiles.size());
  for (models::Profile profile : profiles) {
    profile.workload = models::MeasuredWorkload(profile);
    absl::StatusOr<models::WorkloadDescriptor> descriptor = models::Describe(profile.workload);
    if (!descriptor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("profile ", profile.id, " (",
                                                     profile.workload.Key(), "): ",
                                                     descriptor.status().message()));
    }
    described.push_back({std::move(profile), *std::move(descriptor)});
  }
  return described;
}

}  // namespace

absl::StatusOr<PredictorModel> Fit(absl::Span<const models::Profile> profiles,
                                   const std::map<std::string, models::Node>& nodes,
                                   const FitOptions& options) {
  ASSIGN_OR_RETURN(std::vector<DescribedProfile> described, DescribeAll(profiles));
  return FitDescribed(described, nodes, options);
}

absl::StatusOr<Prediction> Predict(const PredictorModel& model, const models::WorkloadSpec& spec,
                                   const models::Node& node, models::Loop loop) {
  ASSIGN_OR_RETURN(models::WorkloadDescriptor descriptor, models::Describe(spec));
  return PricingPlan(model, node).Predict(descriptor, loop);
}

absl::StatusOr<EvaluationReport> Evaluate(absl::Span<const models::Profile> profiles,
                                          const std::map<std::string, models::Node>& nodes,
                                          const EvaluateOptions& options) {
  ASSIGN_OR_RETURN(std::vector<DescribedProfile> described, DescribeAll(profiles));
  return EvaluateDescribed(described, nodes, options);
}

}  // namespace perfcast::predictor

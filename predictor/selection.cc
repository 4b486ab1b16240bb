#include "predictor/selection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfcast::predictor {

std::string DescribeSelection(const ProfileSelection& s) {
  std::vector<std::string> parts;
  if (!s.gpu_models.empty()) parts.push_back(absl::StrCat("gpu_models=", absl::StrJoin(s.gpu_models, ",")));
  if (!s.exclude_gpu_models.empty()) {
    parts.push_back(absl::StrCat("exclude_gpu_models=", absl::StrJoin(s.exclude_gpu_models, ",")));
  }
  if (!s.families.empty()) parts.push_back(absl::StrCat("families=", absl::StrJoin(s.families, ",")));
  if (s.phase.has_value()) parts.push_back(absl::StrCat("phase=", models::PhaseName(*s.phase)));
  if (s.since_us != 0) parts.push_back(absl::StrCat("since_us=", s.since_us));
  if (s.method_version.has_value()) {
    parts.push_back(absl::StrCat("method_version=", *s.method_version));
  }
  if (s.newest_per_gpu) parts.push_back("newest_per_gpu");
  if (s.exclude_imported) parts.push_back("exclude_imported");
  return parts.empty() ? "all profiles" : absl::StrJoin(parts, " ");
}

std::string MethodNote(std::optional<int> method_version) {
  return method_version.has_value() ? absl::StrCat("measurement method ", *method_version)
                                    : "all measurement methods";
}

ProfileSelector::ProfileSelector(const ProfileSelection& selection)
    : gpus_(selection.gpu_models.begin(), selection.gpu_models.end()),
      excluded_(selection.exclude_gpu_models.begin(), selection.exclude_gpu_models.end()),
      families_(selection.families.begin(), selection.families.end()),
      phase_(selection.phase) {}

bool ProfileSelector::Selects(const models::Profile& profile, const std::string& gpu_model) const {
  if (!gpus_.empty() && !gpus_.contains(gpu_model)) return false;
  if (excluded_.contains(gpu_model)) return false;
  if (profile.workload.kind == models::WorkloadKind::kModel) {
    if (!families_.empty() && !families_.contains(profile.workload.family)) return false;
    if (phase_.has_value() && profile.workload.phase != *phase_) return false;
  }
  return true;
}

}  // namespace perfcast::predictor

#include "predictor/summary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace perfcast::predictor {

ModelSummary Summarize(const PredictorModel& model) {
  ModelSummary info;
  auto describe = [](absl::string_view scope, const FittedModel& m) {
    return absl::StrFormat("%s[%s] %.1f%%", scope, absl::StrJoin(m.features, ","), 100 * m.cv_mape);
  };
  std::vector<std::string> l1, l2;
  double l1_err = 0, l2_err = 0;
  int64_t l1_rows = 0, l2_rows = 0;
  for (const auto& [op_class, m] : model.level1) {
    l1.push_back(describe(OpClassKey(op_class), m));
    l1_err += m.cv_mape * m.training_rows;
    l1_rows += m.training_rows;
  }
  for (const auto& [phase, m] : model.level2) {
    l2.push_back(describe(models::PhaseName(phase), m));
    l2_err += m.cv_mape * m.training_rows;
    l2_rows += m.training_rows;
  }
  const bool top_is_l2 = l2_rows > 0;
  info.target = top_is_l2 ? "iteration_ms" : "call_ms";
  info.training_rows = l1_rows + l2_rows;
  info.cv_mape = top_is_l2 ? l2_err / l2_rows : (l1_rows > 0 ? l1_err / l1_rows : 0);
  info.line = absl::StrFormat("level1: %s; level2: %s; CV MAPE %.2f%%",
                              l1.empty() ? "-" : absl::StrJoin(l1, " "),
                              l2.empty() ? "-" : absl::StrJoin(l2, " "), 100 * info.cv_mape);
  return info;
}

std::vector<std::string> SelectedFeatures(const PredictorModel& model) {
  std::vector<std::string> out;
  for (const auto& [op_class, m] : model.level1) {
    for (const std::string& f : m.features) {
      out.push_back(absl::StrCat("level1/", OpClassKey(op_class), ":", f));
    }
  }
  for (const auto& [phase, m] : model.level2) {
    for (const std::string& f : m.features) {
      out.push_back(absl::StrCat("level2/", models::PhaseName(phase), ":", f));
    }
  }
  return out;
}

bool HasAnyFeature(const PredictorModel& model) {
  for (const auto& [op_class, m] : model.level1) {
    if (!m.features.empty()) return true;
  }
  for (const auto& [phase, m] : model.level2) {
    if (!m.features.empty()) return true;
  }
  return false;
}

double PredictionCvMape(const PredictorModel& model, models::Phase phase, Method method,
                        double summary_cv_mape) {
  auto level2 = model.level2.find(phase);
  if (level2 == model.level2.end() || MethodLevel(method) == 1) return summary_cv_mape;
  return level2->second.cv_mape;
}

}  // namespace perfcast::predictor

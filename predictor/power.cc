#include "predictor/power.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/quantile.h"

namespace perfcast::predictor {

PowerModel FitPower(absl::Span<const PowerSample> samples) {
  std::map<std::string, std::vector<double>> by_scope;
  for (const PowerSample& s : samples) {
    if (!(s.tdp_watts > 0) || !(s.board_power_w > 0)) continue;
    const double u = s.board_power_w / s.tdp_watts;
    by_scope[absl::StrCat(s.family, "/", s.precision)].push_back(u);
    by_scope[s.family].push_back(u);
    by_scope["*"].push_back(u);
  }
  PowerModel model;
  for (auto& [scope, values] : by_scope) {
    if (static_cast<int64_t>(values.size()) < kMinPowerRows) continue;
    PowerCalibration c;
    c.scope = scope;
    c.rows = static_cast<int64_t>(values.size());
    c.utilisation = Quantile(values, 0.5);
    c.p10 = Quantile(values, 0.1);
    c.p90 = Quantile(values, 0.9);
    model.calibrations[scope] = c;
  }
  return model;
}

PowerEstimate EstimatePower(const PowerModel& model, const models::WorkloadSpec& spec,
                            const models::GpuSpec& gpu) {
  PowerEstimate e;
  if (!(gpu.tdp_watts > 0)) {
    e.source = absl::StrCat("unknown: ", gpu.model, " has no TDP in its spec");
    return e;
  }
  const std::string precision(models::PrecisionName(spec.precision));
  for (const std::string& scope : {absl::StrCat(spec.family, "/", precision), spec.family,
                                   std::string("*")}) {
    auto it = model.calibrations.find(scope);
    if (it == model.calibrations.end()) continue;
    e.utilisation = it->second.utilisation;
    e.measured = true;
    e.source = absl::StrFormat("measured: median %.2f of TDP over %d %s profiles",
                               e.utilisation, it->second.rows,
                               scope == "*" ? "(all families)" : scope);
    break;
  }
  if (!e.measured) {
    e.utilisation = kDefaultUtilisation;
    e.source = absl::StrFormat("spec TDP x default utilisation %.2f (no power measured)",
                               kDefaultUtilisation);
  }
  e.watts = gpu.tdp_watts * e.utilisation;
  return e;
}

}  // namespace perfcast::predictor

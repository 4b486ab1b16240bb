#include "client/profile_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/quantile.h"
#include "nlohmann/json.hpp"

namespace perfcast::client {
namespace {

DifferenceStats Summarize(std::string group, const std::vector<double>& signed_differences) {
  DifferenceStats stats;
  stats.group = std::move(group);
  stats.n = static_cast<int64_t>(signed_differences.size());
  if (signed_differences.empty()) return stats;
  std::vector<double> absolute;
  absolute.reserve(signed_differences.size());
  for (double d : signed_differences) absolute.push_back(std::abs(d));
  stats.median_abs = Quantile(absolute, 0.5);
  stats.p90_abs = Quantile(absolute, 0.9);
  stats.median_signed = Quantile(signed_differences, 0.5);
  return stats;
}

struct Configuration {
  std::string family;
  std::vector<double> medians_ms;
  std::vector<double> dispatch_ops_per_s;  // of the profiles that have one
};

std::map<std::string, Configuration> ByWorkloadKey(const std::vector<models::Profile>& profiles) {
  std::map<std::string, Configuration> out;
  for (const models::Profile& p : profiles) {
    Configuration& c = out[p.workload.Key()];
    c.family = p.workload.family;
    c.medians_ms.push_back(p.iteration.median_ms);
    if (p.conditions.dispatch_ops_per_s.value_or(0) > 0) {
      c.dispatch_ops_per_s.push_back(*p.conditions.dispatch_ops_per_s);
    }
  }
  return out;
}

nlohmann::json StatsJson(const DifferenceStats& s) {
  return {{"group", s.group},
          {"n", s.n},
          {"median_abs_pct", 100 * s.median_abs},
          {"p90_abs_pct", 100 * s.p90_abs},
          {"median_signed_pct", 100 * s.median_signed}};
}

}  // namespace

absl::StatusOr<CompareReport> CompareRuns(const std::vector<models::Profile>& a,
                                          const std::vector<models::Profile>& b,
                                          const CompareOptions& options) {
  if (!(options.min_ms >= 0) || !std::isfinite(options.min_ms)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--min-ms must be a finite number >= 0, got ", options.min_ms));
  }
  if (!(options.host_tolerance >= 0) || !std::isfinite(options.host_tolerance)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--host-tolerance must be a finite number >= 0, got ", options.host_tolerance));
  }
  const std::map<std::string, Configuration> run_a = ByWorkloadKey(a);
  const std::map<std::string, Configuration> run_b = ByWorkloadKey(b);
  CompareReport report;
  std::map<std::string, std::vector<double>> by_family;
  std::vector<double> all, host_matched;
  for (const auto& [key, config_a] : run_a) {
    auto it = run_b.find(key);
    if (it == run_b.end()) {
      ++report.only_in_a;
      continue;
    }
    const double ms_a = Quantile(config_a.medians_ms, 0.5);
    const double ms_b = Quantile(it->second.medians_ms, 0.5);
    if ((ms_a + ms_b) / 2 < options.min_ms || ms_a <= 0) {
      ++report.below_min;
      continue;
    }
    const double difference = ms_b / ms_a - 1;
    by_family[config_a.family].push_back(difference);
    all.push_back(difference);
    const Configuration& config_b = it->second;
    if (!config_a.dispatch_ops_per_s.empty() && !config_b.dispatch_ops_per_s.empty()) {
      const double host_ratio = Quantile(config_b.dispatch_ops_per_s, 0.5) /
                                Quantile(config_a.dispatch_ops_per_s, 0.5);
      if (std::abs(host_ratio - 1) <= options.host_tolerance) host_matched.push_back(difference);
    }
  }
  for (const auto& [key, config_b] : run_b) {
    if (!run_a.contains(key)) ++report.only_in_b;
  }
  if (all.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no configuration is in both runs with a step of at least ", options.min_ms,
        " ms (", report.only_in_a, " only in the first, ", report.only_in_b,
        " only in the second, ", report.below_min, " shorter)"));
  }
  for (const auto& [family, differences] : by_family) {
    report.families.push_back(Summarize(family, differences));
  }
  report.overall = Summarize("all", all);
  report.host_matched = Summarize("host-matched", host_matched);
  return report;
}

std::string CompareReportJson(const CompareReport& report, const CompareOptions& options) {
  nlohmann::json families = nlohmann::json::array();
  for (const DifferenceStats& s : report.families) families.push_back(StatsJson(s));
  nlohmann::json out = {{"min_ms", options.min_ms},
                        {"host_tolerance", options.host_tolerance},
                        {"overall", StatsJson(report.overall)},
                        {"host_matched", StatsJson(report.host_matched)},
                        {"families", std::move(families)},
                        {"only_in_a", report.only_in_a},
                        {"only_in_b", report.only_in_b},
                        {"below_min", report.below_min}};
  return out.dump();
}

}  // namespace perfcast::client

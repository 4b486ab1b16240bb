#include "predictor/rates.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/quantile.h"

namespace perfcast::predictor {
namespace {

// One row per rate the predictor scales: its key, the spec field and the
// measured field. Indexing by precision follows models::Precision's order.
// The agent does not measure FP8 or INT8 (no `measured` member): their spec
// rates are scaled by the efficiency of the 16-bit tensor path (`borrow`),
// the nearest kind of work the fit has seen.
struct RateField {
  absl::string_view key;
  double models::GpuSpec::*spec;
  std::optional<double> models::MeasuredRates::*measured;
  absl::string_view borrow = "";
};
constexpr RateField kRateFields[] = {
    {"fp32", &models::GpuSpec::fp32_tflops, &models::MeasuredRates::fp32_tflops},
    {"tf32", &models::GpuSpec::tf32_tflops, &models::MeasuredRates::tf32_tflops},
    {"fp16", &models::GpuSpec::fp16_tflops, &models::MeasuredRates::fp16_tflops},
    {"bf16", &models::GpuSpec::bf16_tflops, &models::MeasuredRates::bf16_tflops},
    {"fp64", &models::GpuSpec::fp64_tflops, &models::MeasuredRates::fp64_tflops},
    {"fp8", &models::GpuSpec::fp8_tflops, nullptr, "bf16"},
    {"int8", &models::GpuSpec::int8_tops, nullptr, "bf16"},
    {"memory", &models::GpuSpec::memory_bandwidth_gbs,
     &models::MeasuredRates::memory_bandwidth_gbs},
};
// Rows 0..kMemoryField-1 follow models::Precision's order; strict-fp32 has
// none of its own (FlopsPerSecond).
constexpr int kMemoryField = 7;
static_assert(std::size(kRateFields) == kMemoryField + 1);

// The board-power class (PowerClass) whose cards run below their boost clock
// because of their power budget.
constexpr absl::string_view kPowerCappedClass = "<=100W";

// LeaveOneOutRateSpread's key suffix for the nodes that a sibling of their
// architecture still taught when left out.
constexpr absl::string_view kSeenArchitectureSuffix = "/seen-architecture";

constexpr std::pair<RateSource, absl::string_view> kSourceNames[] = {
    {RateSource::kMeasured, "measured"},
    {RateSource::kSpecTimesEfficiency, "spec*efficiency"},
    {RateSource::kSpecTimesClassEfficiency, "spec*class-efficiency"},
    {RateSource::kSpecTimesGlobalEfficiency, "spec*global-efficiency"},
    {RateSource::kSpec, "spec"},
};

// The efficiency of rate `key` (of spec value `spec`) that `table` holds for
// `gpu`: its architecture's, else its efficiency class's (what its board
// power allows, where the class has a power cap for the rate), else the
// global one; none when the table has none. `source` says which.
std::optional<double> EfficiencyFor(const EfficiencyTable& table, const models::GpuSpec& gpu,
                                    const std::string& key, double spec, RateSource& source) {
  auto find = [&](const std::map<std::string, std::map<std::string, double>>& by,
                  const std::string& group) -> std::optional<double> {
    auto it = by.find(group);
    if (it == by.end()) return std::nullopt;
    auto rate = it->second.find(key);
    if (rate == it->second.end()) return std::nullopt;
    return rate->second;
  };
  if (std::optional<double> e = find(table.by_architecture, gpu.architecture)) {
    source = RateSource::kSpecTimesEfficiency;
    return e;
  }
  if (const std::string group = EfficiencyClass(gpu); !group.empty()) {
    if (std::optional<double> e = find(table.by_class, group)) {
      source = RateSource::kSpecTimesClassEfficiency;
      const std::optional<double> cap = find(table.power_cap_by_class, group);
      auto global = table.global.find(key);
      if (cap.has_value() && gpu.tdp_watts > 0 && spec > 0 && global != table.global.end()) {
        return PowerCappedEfficiency(*cap, gpu.tdp_watts, spec, global->second);
      }
      return e;
    }
  }
  if (auto global = table.global.find(key); global != table.global.end()) {
    source = RateSource::kSpecTimesGlobalEfficiency;
    return global->second;
  }
  return std::nullopt;
}

// Returns the effective rate in the field's own unit (TFLOP/s or GB/s), 0 if
// the node has neither a measurement nor a spec value.
double Resolve(const models::Node& node, const RateField& field,
               const EfficiencyTable& efficiencies, RateSource& worst) {
  if (field.measured != nullptr) {
    const std::optional<double>& measured = node.measured.*field.measured;
    if (measured.has_value() && *measured > 0) return *measured;
  }
  const double spec = node.gpu.*field.spec;
  if (!(spec > 0)) return 0;
  RateSource source = RateSource::kSpec;
  double efficiency = 1;
  const std::string key(field.borrow.empty() ? field.key : field.borrow);
  if (std::optional<double> learned = EfficiencyFor(efficiencies, node.gpu, key, spec, source)) {
    efficiency = *learned;
  }
  worst = std::max(worst, source);
  return spec * efficiency;
}

// Whether `node` teaches LearnEfficiencies anything: a rate it has both a
// measurement and a spec value of.
bool HasRates(const models::Node& node) {
  return std::any_of(std::begin(kRateFields), std::end(kRateFields), [&](const RateField& f) {
    return f.measured != nullptr && (node.measured.*f.measured).value_or(0) > 0 &&
           node.gpu.*f.spec > 0;
  });
}

// Calls fn(key, measured, spec) for every rate `node` has both a positive
// measurement and a positive spec value of.
template <typename Fn>
void ForEachMeasuredRate(const models::Node& node, Fn fn) {
  for (const RateField& field : kRateFields) {
    if (field.measured == nullptr) continue;
    const std::optional<double>& measured = node.measured.*field.measured;
    const double spec = node.gpu.*field.spec;
    if (!measured.has_value() || !(*measured > 0) || !(spec > 0)) continue;
    fn(std::string(field.key), *measured, spec);
  }
}

// Sums of log values and their count, per key: a geometric mean treats 0.5x
// and 2x symmetrically.
using LogSums = std::map<std::string, std::pair<double, int>>;

void AddLog(LogSums& sums, const std::string& key, double log_value) {
  auto& sum = sums[key];
  sum.first += log_value;
  ++sum.second;
}

std::map<std::string, double> GeometricMeans(const LogSums& sums) {
  std::map<std::string, double> means;
  for (const auto& [key, sum] : sums) means[key] = std::exp(sum.first / sum.second);
  return means;
}

std::map<std::string, std::map<std::string, double>> GeometricMeans(
    const std::map<std::string, LogSums>& sums) {
  std::map<std::string, std::map<std::string, double>> means;
  for (const auto& [group, group_sums] : sums) means[group] = GeometricMeans(group_sums);
  return means;
}

// Appends |log(spec × efficiency / measured)| of every rate `node` has both
// of to errors[key + suffix], the efficiency from `table` (its
// architecture's, else the global one).
void AddRateErrors(const models::Node& node, const EfficiencyTable& table,
                   absl::string_view suffix, std::map<std::string, std::vector<double>>& errors) {
  ForEachMeasuredRate(node, [&](const std::string& key, double measured, double spec) {
    RateSource source = RateSource::kSpec;
    const std::optional<double> efficiency = EfficiencyFor(table, node.gpu, key, spec, source);
    if (!efficiency.has_value()) return;
    errors[absl::StrCat(key, suffix)].push_back(std::abs(std::log(spec * *efficiency / measured)));
  });
}

}  // namespace

absl::string_view RateSourceName(RateSource source) {
  for (const auto& [value, name] : kSourceNames) {
    if (value == source) return name;
  }
  return "unknown";
}

EfficiencyTable LearnEfficiencies(absl::Span<const models::Node* const> nodes) {
  std::map<std::string, LogSums> arch_sums, class_sums;
  LogSums global_sums;
  for (const models::Node* node : nodes) {
    const std::string group = EfficiencyClass(node->gpu);
    ForEachMeasuredRate(*node, [&](const std::string& key, double measured, double spec) {
      const double log_ratio = std::log(measured / spec);
      AddLog(arch_sums[node->gpu.architecture], key, log_ratio);
      if (!group.empty()) AddLog(class_sums[group], key, log_ratio);
      AddLog(global_sums, key, log_ratio);
    });
  }
  // The host side has no spec sheet: a node without measurements takes the
  // typical host of the nodes that have them.
  for (const models::Node* node : nodes) {
    const auto& m = node->measured;
    if (m.launch_latency_us.value_or(0) > 0) {
      AddLog(global_sums, std::string(kHostLaunchKey), std::log(*m.launch_latency_us));
    }
    const double h2d = m.h2d_pageable_gbs.value_or(0) > 0 ? *m.h2d_pageable_gbs
                                                           : m.h2d_pinned_gbs.value_or(0);
    if (h2d > 0) AddLog(global_sums, std::string(kHostH2dKey), std::log(h2d));
    if (m.dispatch_ops_per_s.value_or(0) > 0) {
      AddLog(global_sums, std::string(kHostDispatchKey), std::log(*m.dispatch_ops_per_s));
    }
  }
  EfficiencyTable table;
  table.by_architecture = GeometricMeans(arch_sums);
  table.by_class = GeometricMeans(class_sums);
  table.global = GeometricMeans(global_sums);
  // A power-capped class's cap comes from its nodes that sustain less of a
  // math rate than the global efficiency: those the power budget holds back.
  // Bigger boards run below their spec for other reasons, and memory
  // bandwidth is not what a power cap throttles.
  std::map<std::string, LogSums> cap_sums;
  for (const models::Node* node : nodes) {
    const std::string group = EfficiencyClass(node->gpu);
    if (group.empty() || PowerClass(node->gpu.tdp_watts) != kPowerCappedClass) continue;
    ForEachMeasuredRate(*node, [&](const std::string& key, double measured, double spec) {
      if (key == "memory") return;
      const double efficiency = measured / spec;
      auto global = table.global.find(key);
      if (global == table.global.end() || !(efficiency < global->second)) return;
      AddLog(cap_sums[group], key,
             std::log(efficiency) - std::log(node->gpu.tdp_watts / spec) / 3);
    });
  }
  table.power_cap_by_class = GeometricMeans(cap_sums);
  return table;
}

double PowerCappedEfficiency(double cap, double tdp_watts, double spec, double ceiling) {
  return std::min(ceiling, cap * std::cbrt(tdp_watts / spec));
}

std::string PowerClass(double tdp_watts) {
  if (!(tdp_watts > 0)) return "";
  if (tdp_watts <= 100) return "<=100W";
  return tdp_watts <= 450 ? "100-450W" : ">450W";
}

std::string EfficiencyClass(const models::GpuSpec& gpu) {
  const std::string power_class = PowerClass(gpu.tdp_watts);
  if (gpu.vendor.empty() || power_class.empty()) return "";
  return absl::StrCat(gpu.vendor, " ", power_class);
}

absl::string_view DistanceKindName(DistanceKind kind) {
  switch (kind) {
    case DistanceKind::kArchitecture:
      return "architecture";
    case DistanceKind::kVendor:
      return "vendor";
    case DistanceKind::kPowerClass:
      return "power class";
  }
  return "unknown";
}

std::string SeenArchitectureSpreadKey(absl::string_view rate_key) {
  return absl::StrCat(rate_key, kSeenArchitectureSuffix);
}

std::string DistanceSpreadKey(absl::string_view rate_key, DistanceKind kind) {
  switch (kind) {
    case DistanceKind::kArchitecture:
      return absl::StrCat(rate_key, "/new-architecture");
    case DistanceKind::kVendor:
      return absl::StrCat(rate_key, "/new-vendor");
    case DistanceKind::kPowerClass:
      return absl::StrCat(rate_key, "/new-power-class");
  }
  return std::string(rate_key);
}

std::string DistanceGroup(const models::GpuSpec& gpu, DistanceKind kind) {
  switch (kind) {
    case DistanceKind::kArchitecture:
      return gpu.architecture;
    case DistanceKind::kVendor:
      return gpu.vendor;
    case DistanceKind::kPowerClass:
      return PowerClass(gpu.tdp_watts);
  }
  return "";
}

std::map<std::string, double> LeaveOneOutRateSpread(absl::Span<const models::Node* const> nodes) {
  constexpr DistanceKind kKinds[] = {DistanceKind::kArchitecture, DistanceKind::kVendor,
                                     DistanceKind::kPowerClass};
  std::map<std::string, std::vector<double>> errors;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<const models::Node*> others(nodes.begin(), nodes.end());
    others.erase(others.begin() + i);
    const EfficiencyTable table = LearnEfficiencies(others);
    const models::Node& node = *nodes[i];
    AddRateErrors(node, table, "", errors);
    // Left out, a node that no other node with rates shares a group with
    // was as far from the rest as a target new in that kind is from the
    // fit: its error also counts toward that kind's spread.
    for (DistanceKind kind : kKinds) {
      const std::string group = DistanceGroup(node.gpu, kind);
      if (group.empty()) continue;
      const bool alone = std::none_of(others.begin(), others.end(), [&](const models::Node* o) {
        return HasRates(*o) && DistanceGroup(o->gpu, kind) == group;
      });
      if (alone) AddRateErrors(node, table, DistanceSpreadKey("", kind), errors);
      // Left out beside a sibling of its architecture, it was as far as a
      // spec-sheet GPU of a seen architecture is.
      if (!alone && kind == DistanceKind::kArchitecture) {
        AddRateErrors(node, table, kSeenArchitectureSuffix, errors);
      }
    }
  }
  // 1.4826 × the median absolute error estimates a normal spread robustly:
  // one power-capped GPU among five would otherwise set every interval.
  std::map<std::string, double> spread;
  for (auto& [key, values] : errors) {
    if (values.size() < 2) continue;
    spread[key] = 1.4826 * Quantile(values, 0.5);
  }
  return spread;
}

RatePath PrecisionRatePath(const models::Node& node, const EfficiencyTable& efficiencies,
                           models::Precision precision) {
  if (precision == models::Precision::kStrictFp32) precision = models::Precision::kFp32;
  auto measured_rate = [&](const RateField& field) {
    return field.measured == nullptr ? 0.0 : (node.measured.*field.measured).value_or(0);
  };
  const RateField* field = &kRateFields[static_cast<int>(precision)];
  if (!(measured_rate(*field) > 0) && !(node.gpu.*field->spec > 0)) field = &kRateFields[0];
  RatePath path;
  path.key = std::string(field->key);
  if (measured_rate(*field) > 0) {
    path.seen = true;
  } else if (!field->borrow.empty()) {
    path.borrowed_from = std::string(field->borrow);
  } else {
    path.seen = efficiencies.global.contains(path.key);
  }
  return path;
}

EffectiveRates WithRunConditions(const EffectiveRates& rates,
                                 const models::RunConditions& conditions) {
  EffectiveRates out = rates;
  if (conditions.launch_latency_us.value_or(0) > 0) {
    out.launch_latency_s = 1e-6 * *conditions.launch_latency_us;
  }
  if (conditions.h2d_pageable_gbs.value_or(0) > 0) {
    out.h2d_bytes_per_s = 1e9 * *conditions.h2d_pageable_gbs;
  } else if (conditions.h2d_pinned_gbs.value_or(0) > 0) {
    out.h2d_bytes_per_s = 1e9 * *conditions.h2d_pinned_gbs;
  }
  if (conditions.dispatch_ops_per_s.value_or(0) > 0) {
    out.dispatch_ops_per_s = *conditions.dispatch_ops_per_s;
  }
  return out;
}

double EffectiveRates::FlopsPerSecond(models::Precision precision) const {
  // fp32 and strict-fp32 differ in which operations run in TF32, which the
  // descriptor's per-operation precision says, not in the FP32 rate.
  if (precision == models::Precision::kStrictFp32) precision = models::Precision::kFp32;
  const double rate = flops_per_s[static_cast<int>(precision)];
  return rate > 0 ? rate : flops_per_s[static_cast<int>(models::Precision::kFp32)];
}

absl::StatusOr<EffectiveRates> ResolveRates(const models::Node& node,
                                            const EfficiencyTable& efficiencies) {
  EffectiveRates rates;
  RateSource worst = RateSource::kMeasured;
  for (int p = 0; p < kMemoryField; ++p) {
    // FP8 and INT8 are never measured: their spec-derived rates must not
    // mark a measured node's every answer as spec-derived.
    RateSource unmeasured = RateSource::kMeasured;
    rates.flops_per_s[p] = 1e12 * Resolve(node, kRateFields[p], efficiencies,
                                          kRateFields[p].measured == nullptr ? unmeasured : worst);
  }
  rates.memory_bytes_per_s = 1e9 * Resolve(node, kRateFields[kMemoryField], efficiencies, worst);
  if (!(rates.flops_per_s[0] > 0) || !(rates.memory_bytes_per_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name, "' has no fp32 rate or memory bandwidth, measured or in its spec"));
  }
  const auto& m = node.measured;
  auto typical = [&](absl::string_view key, double fallback) {
    auto it = efficiencies.global.find(std::string(key));
    return it == efficiencies.global.end() ? fallback : it->second;
  };
  double launch_us = typical(kHostLaunchKey, kDefaultLaunchLatencyUs);
  if (m.launch_latency_us.value_or(0) > 0) launch_us = *m.launch_latency_us;
  rates.launch_latency_s = 1e-6 * launch_us;
  double h2d_gbs = typical(kHostH2dKey, kDefaultH2dGbs);
  if (m.h2d_pageable_gbs.value_or(0) > 0) {
    h2d_gbs = *m.h2d_pageable_gbs;
  } else if (m.h2d_pinned_gbs.value_or(0) > 0) {
    h2d_gbs = *m.h2d_pinned_gbs;
  }
  rates.h2d_bytes_per_s = 1e9 * h2d_gbs;
  rates.dispatch_ops_per_s = m.dispatch_ops_per_s.value_or(0) > 0
                                 ? *m.dispatch_ops_per_s
                                 : typical(kHostDispatchKey, kDefaultDispatchOpsPerS);
  rates.sm_count = std::max(1, node.gpu.sm_count);
  rates.source = worst;
  return rates;
}

}  // namespace perfcast::predictor

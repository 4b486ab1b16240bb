#include "predictor/profile_rates.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/quantile.h"

namespace perfcast::predictor {
namespace {

constexpr double kMinRateFlops = 1e10;
constexpr double kMinRateBytes = 1e8;
constexpr double kRateQuantile = 0.9;
constexpr char kDispatchKey[] = "dispatch";

using RateMember = std::optional<double> models::MeasuredRates::*;

RateMember MeasuredField(const std::string& key) {
  if (key == "fp32") return &models::MeasuredRates::fp32_tflops;
  if (key == "tf32") return &models::MeasuredRates::tf32_tflops;
  if (key == "fp16") return &models::MeasuredRates::fp16_tflops;
  if (key == "bf16") return &models::MeasuredRates::bf16_tflops;
  if (key == "fp64") return &models::MeasuredRates::fp64_tflops;
  if (key == "memory") return &models::MeasuredRates::memory_bandwidth_gbs;
  if (key == kDispatchKey) return &models::MeasuredRates::dispatch_ops_per_s;
  return nullptr;
}

// The rate key of a GEMM's precision: amp matmuls run in 16 bits.
const char* MathKey(models::Precision precision) {
  switch (precision) {
    case models::Precision::kFp32:
    case models::Precision::kStrictFp32: return "fp32";
    case models::Precision::kTf32: return "tf32";
    case models::Precision::kFp16Amp: return "fp16";
    case models::Precision::kBf16Amp: return "bf16";
    case models::Precision::kFp64: return "fp64";
    case models::Precision::kFp8: return "fp8";
    case models::Precision::kInt8: return "int8";
  }
  return "fp32";
}

}  // namespace

ProfileRates RatesFromProfiles(absl::Span<const DescribedProfile> profiles,
                               const std::map<std::string, models::Node>& nodes) {
  std::map<std::string, std::map<std::string, std::vector<double>>> achieved;
  for (const DescribedProfile& p : profiles) {
    const std::optional<double>& dispatch = p.profile.conditions.dispatch_ops_per_s;
    if (dispatch.value_or(0) > 0) achieved[p.profile.node_name][kDispatchKey].push_back(*dispatch);
    if (p.profile.workload.kind != models::WorkloadKind::kOperation ||
        p.descriptor.operations.empty() || !(p.profile.iteration.mean_ms > 0)) {
      continue;
    }
    const models::Operation& op = p.descriptor.operations.front();
    const double seconds = p.profile.iteration.mean_ms / 1e3;
    if (op.op_class == models::OpClass::kGemm && op.flops >= kMinRateFlops) {
      achieved[p.profile.node_name][MathKey(op.precision)].push_back(op.flops / seconds / 1e12);
    } else if (op.op_class == models::OpClass::kElementwise && op.bytes >= kMinRateBytes) {
      achieved[p.profile.node_name]["memory"].push_back(op.bytes / seconds / 1e9);
    }
  }
  ProfileRates out;
  for (const auto& [node_name, by_key] : achieved) {
    auto node = nodes.find(node_name);
    if (node == nodes.end()) continue;
    for (const auto& [key, values] : by_key) {
      const bool dispatch = key == kDispatchKey;
      const RateMember field = MeasuredField(key);
      if (values.size() < kMinRateProfiles) continue;
      if (!dispatch && (node->second.measured.*field).has_value()) continue;
      out[node_name][key] = Quantile(values, dispatch ? 0.5 : kRateQuantile);
    }
  }
  return out;
}

models::Node WithProfileRates(const models::Node& node, const ProfileRates& rates) {
  models::Node out = node;
  auto it = rates.find(node.name);
  if (it == rates.end()) return out;
  for (const auto& [key, value] : it->second) {
    const RateMember field = MeasuredField(key);
    if (field == nullptr) continue;
    if (key == kDispatchKey || !(out.measured.*field).has_value()) out.measured.*field = value;
  }
  return out;
}

}  // namespace perfcast::predictor

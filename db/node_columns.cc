#include "db/node_columns.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "db/store_rules.h"
#include "nlohmann/json.hpp"

namespace perfcast::db {
namespace {

using models::Node;

std::string LabelsJson(const Node& n) { return nlohmann::json(n.labels).dump(); }

// Labels that are not a JSON object of strings (a hand-edited row) read as
// none rather than failing every listing.
std::map<std::string, std::string> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return labels;
  for (auto& [key, value] : parsed.items()) {
    if (value.is_string()) labels[key] = value.get<std::string>();
  }
  return labels;
}

// Accessors of plain fields; an int field's cell is an int64_t.
#define PERFCAST_TEXT(column, member, refreshed)                                    \
  NodeColumn {                                                                      \
    column, NodeCellKind::kText, refreshed,                                         \
        [](const Node& n) -> NodeCell { return n.member; },                         \
        [](NodeCell c, Node& n) { n.member = std::get<std::string>(std::move(c)); } \
  }
#define PERFCAST_INT(column, member, refreshed)                                      \
  NodeColumn {                                                                       \
    column, NodeCellKind::kInteger, refreshed,                                       \
        [](const Node& n) -> NodeCell { return static_cast<int64_t>(n.member); },    \
        [](NodeCell c, Node& n) {                                                    \
          n.member = static_cast<decltype(n.member)>(std::get<int64_t>(c));          \
        }                                                                            \
  }
#define PERFCAST_REAL(column, member, refreshed)                      \
  NodeColumn {                                                        \
    column, NodeCellKind::kReal, refreshed,                           \
        [](const Node& n) -> NodeCell { return n.member; },           \
        [](NodeCell c, Node& n) { n.member = std::get<double>(c); }   \
  }
#define PERFCAST_RATE(column, member)                                               \
  NodeColumn {                                                                      \
    column, NodeCellKind::kOptionalReal, true,                                      \
        [](const Node& n) -> NodeCell { return n.measured.member; },                \
        [](NodeCell c, Node& n) { n.measured.member = std::get<std::optional<double>>(c); } \
  }

const NodeColumn kColumns[] = {
    PERFCAST_TEXT("name", name, false),
    NodeColumn{"source", NodeCellKind::kText, false,
               [](const Node& n) -> NodeCell { return std::string(NodeSourceName(n.source)); },
               [](NodeCell c, Node& n) { n.source = ParseNodeSource(std::get<std::string>(c)); }},
    NodeColumn{"labels", NodeCellKind::kText, false,
               [](const Node& n) -> NodeCell { return LabelsJson(n); },
               [](NodeCell c, Node& n) { n.labels = ParseLabels(std::get<std::string>(c)); }},
    PERFCAST_INT("gpu_count", gpu_count, false),
    PERFCAST_TEXT("gpu_model", gpu.model, false),
    PERFCAST_TEXT("gpu_vendor_name", gpu.vendor_name, false),
    PERFCAST_TEXT("architecture", gpu.architecture, false),
    PERFCAST_TEXT("compute_capability", gpu.compute_capability, false),
    PERFCAST_INT("sm_count", gpu.sm_count, false),
    PERFCAST_REAL("boost_clock_mhz", gpu.boost_clock_mhz, false),
    PERFCAST_REAL("memory_gib", gpu.memory_gib, false),
    PERFCAST_INT("memory_bus_width_bits", gpu.memory_bus_width_bits, false),
    PERFCAST_REAL("memory_bandwidth_gbs", gpu.memory_bandwidth_gbs, false),
    PERFCAST_REAL("fp32_tflops", gpu.fp32_tflops, false),
    PERFCAST_REAL("tf32_tflops", gpu.tf32_tflops, false),
    PERFCAST_REAL("fp16_tflops", gpu.fp16_tflops, false),
    PERFCAST_REAL("bf16_tflops", gpu.bf16_tflops, false),
    PERFCAST_REAL("fp64_tflops", gpu.fp64_tflops, false),
    PERFCAST_REAL("l2_cache_mib", gpu.l2_cache_mib, false),
    PERFCAST_TEXT("interconnect", gpu.interconnect, false),
    PERFCAST_TEXT("hostname", host.hostname, true),
    PERFCAST_TEXT("cpu_model", host.cpu_model, true),
    PERFCAST_INT("cpu_cores", host.cpu_cores, true),
    PERFCAST_TEXT("driver_version", host.driver_version, true),
    PERFCAST_TEXT("cuda_version", host.cuda_version, true),
    PERFCAST_TEXT("torch_version", host.torch_version, true),
    PERFCAST_RATE("measured_bandwidth_gbs", memory_bandwidth_gbs),
    PERFCAST_RATE("measured_fp32_tflops", fp32_tflops),
    PERFCAST_RATE("measured_tf32_tflops", tf32_tflops),
    PERFCAST_RATE("measured_fp16_tflops", fp16_tflops),
    PERFCAST_RATE("measured_bf16_tflops", bf16_tflops),
    PERFCAST_RATE("measured_fp64_tflops", fp64_tflops),
    PERFCAST_RATE("launch_latency_us", launch_latency_us),
    PERFCAST_RATE("h2d_pinned_gbs", h2d_pinned_gbs),
    PERFCAST_RATE("h2d_pageable_gbs", h2d_pageable_gbs),
    PERFCAST_RATE("cpu_single_thread_score", cpu_single_thread_score),
    PERFCAST_INT("registered_at_us", registered_at_us, true),
    PERFCAST_REAL("tdp_watts", gpu.tdp_watts, false),
    PERFCAST_RATE("idle_power_watts", idle_power_watts),
    PERFCAST_RATE("dispatch_ops_per_s", dispatch_ops_per_s),
    PERFCAST_REAL("nvlink_gbs", gpu.nvlink_gbs, false),
    PERFCAST_INT("nvlink_gpus", gpu.nvlink_gpus, false),
    PERFCAST_REAL("pcie_gbs", gpu.pcie_gbs, false),
    PERFCAST_REAL("network_gbs", gpu.network_gbs, false),
    PERFCAST_TEXT("gpu_vendor", gpu.vendor, false),
    PERFCAST_REAL("base_clock_mhz", gpu.base_clock_mhz, false),
    PERFCAST_REAL("fp8_tflops", gpu.fp8_tflops, false),
    PERFCAST_REAL("int8_tops", gpu.int8_tops, false),
    PERFCAST_INT("pcie_generation", gpu.pcie_generation, false),
    PERFCAST_TEXT("python_version", host.python_version, true),
    PERFCAST_TEXT("python_torch_version", host.python_torch_version, true),
    PERFCAST_RATE("python_op_us", python_op_us),
    PERFCAST_RATE("torchscript_op_us", torchscript_op_us),
};

#undef PERFCAST_TEXT
#undef PERFCAST_INT
#undef PERFCAST_REAL
#undef PERFCAST_RATE

}  // namespace

absl::Span<const NodeColumn> NodeColumns() { return kColumns; }

std::string NodeColumnList() {
  std::string out;
  for (const NodeColumn& column : kColumns) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", column.name);
  }
  return out;
}

std::string NodeRefreshGuard(absl::string_view marker) {
  int parameter = 2;
  for (const NodeColumn& column : kColumns) {
    if (!column.refreshed) continue;
    if (column.name == "registered_at_us") {
      return absl::StrCat("registered_at_us <= ", marker, parameter);
    }
    ++parameter;
  }
  return "TRUE";  // unreachable: registered_at_us is a refreshed column
}

std::string NodeRefreshAssignments(absl::string_view marker) {
  std::string out;
  int parameter = 2;
  for (const NodeColumn& column : kColumns) {
    if (!column.refreshed) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", column.name, " = ", marker, parameter++);
  }
  return out;
}

}  // namespace perfcast::db

#include "models/gpu_catalog.h"

#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace perfcast::models {

// Generated at build time from gpu_catalog.json.
extern const char kGpuCatalogJson[];

namespace {

using nlohmann::json;

absl::Status Field(const json& object, const char* name, std::string& out, bool required) {
  auto it = object.find(name);
  if (it == object.end()) {
    return required ? absl::InvalidArgumentError(absl::StrCat("missing field '", name, "'"))
                    : absl::OkStatus();
  }
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("field '", name, "' must be a string"));
  }
  out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status Field(const json& object, const char* name, double& out, bool required) {
  auto it = object.find(name);
  if (it == object.end()) {
    return required ? absl::InvalidArgumentError(absl::StrCat("missing field '", name, "'"))
                    : absl::OkStatus();
  }
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("field '", name, "' must be a number"));
  }
  out = it->get<double>();
  if (!std::isfinite(out) || out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field '", name, "' must be finite and non-negative, got ", out));
  }
  return absl::OkStatus();
}

absl::Status Field(const json& object, const char* name, int& out, bool required) {
  double value = out;
  RETURN_IF_ERROR(Field(object, name, value, required));
  if (value != std::floor(value) || value > 1e9) {
    return absl::InvalidArgumentError(absl::StrCat("field '", name, "' must be an integer"));
  }
  out = static_cast<int>(value);
  return absl::OkStatus();
}

absl::StatusOr<GpuSpec> GpuSpecFromObject(const json& o) {
  if (!o.is_object()) return absl::InvalidArgumentError("a GPU spec must be a JSON object");
  GpuSpec g;
  absl::Status s;
  auto take = [&](auto&& status) {
    if (s.ok() && !status.ok()) s = status;
  };
  take(Field(o, "model", g.model, true));
  take(Field(o, "vendor_name", g.vendor_name, false));
  take(Field(o, "architecture", g.architecture, false));
  take(Field(o, "compute_capability", g.compute_capability, false));
  take(Field(o, "sm_count", g.sm_count, false));
  take(Field(o, "boost_clock_mhz", g.boost_clock_mhz, false));
  take(Field(o, "memory_gib", g.memory_gib, false));
  take(Field(o, "memory_bus_width_bits", g.memory_bus_width_bits, false));
  take(Field(o, "memory_bandwidth_gbs", g.memory_bandwidth_gbs, true));
  take(Field(o, "fp32_tflops", g.fp32_tflops, true));
  take(Field(o, "tf32_tflops", g.tf32_tflops, false));
  take(Field(o, "fp16_tflops", g.fp16_tflops, false));
  take(Field(o, "bf16_tflops", g.bf16_tflops, false));
  take(Field(o, "fp64_tflops", g.fp64_tflops, false));
  take(Field(o, "l2_cache_mib", g.l2_cache_mib, false));
  take(Field(o, "interconnect", g.interconnect, false));
  take(Field(o, "tdp_watts", g.tdp_watts, false));
  take(Field(o, "nvlink_gbs", g.nvlink_gbs, false));
  take(Field(o, "nvlink_gpus", g.nvlink_gpus, false));
  take(Field(o, "pcie_gbs", g.pcie_gbs, false));
  take(Field(o, "network_gbs", g.network_gbs, false));
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU spec", g.model.empty() ? "" : absl::StrCat(" '", g.model, "'"), ": ",
                     s.message()));
  }
  if (g.model.empty()) return absl::InvalidArgumentError("GPU spec: 'model' is empty");
  if (g.memory_bandwidth_gbs <= 0 || g.fp32_tflops <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU spec '", g.model, "': memory_bandwidth_gbs and fp32_tflops must be positive"));
  }
  return g;
}

absl::StatusOr<json> ParseJson(absl::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("malformed JSON");
  return doc;
}

json GpuSpecObject(const GpuSpec& g) {
  return json{{"model", g.model},
              {"vendor_name", g.vendor_name},
              {"architecture", g.architecture},
              {"compute_capability", g.compute_capability},
              {"sm_count", g.sm_count},
              {"boost_clock_mhz", g.boost_clock_mhz},
              {"memory_gib", g.memory_gib},
              {"memory_bus_width_bits", g.memory_bus_width_bits},
              {"memory_bandwidth_gbs", g.memory_bandwidth_gbs},
              {"fp32_tflops", g.fp32_tflops},
              {"tf32_tflops", g.tf32_tflops},
              {"fp16_tflops", g.fp16_tflops},
              {"bf16_tflops", g.bf16_tflops},
              {"fp64_tflops", g.fp64_tflops},
              {"l2_cache_mib", g.l2_cache_mib},
              {"interconnect", g.interconnect},
              {"tdp_watts", g.tdp_watts},
              {"nvlink_gbs", g.nvlink_gbs},
              {"nvlink_gpus", g.nvlink_gpus},
              {"pcie_gbs", g.pcie_gbs},
              {"network_gbs", g.network_gbs}};
}

}  // namespace

const GpuCatalog& GpuCatalog::BuiltIn() {
  static const GpuCatalog* const kCatalog = [] {
    absl::StatusOr<GpuCatalog> parsed = Parse(kGpuCatalogJson);
    // The shipped file is checked by tests; a broken one is a build defect.
    if (!parsed.ok()) std::abort();
    return new GpuCatalog(*std::move(parsed));
  }();
  return *kCatalog;
}

absl::StatusOr<GpuCatalog> GpuCatalog::Parse(absl::string_view text) {
  absl::StatusOr<json> doc = ParseJson(text);
  if (!doc.ok()) return absl::InvalidArgumentError("GPU catalog: malformed JSON");
  auto gpus = doc->find("gpus");
  if (gpus == doc->end() || !gpus->is_array()) {
    return absl::InvalidArgumentError("GPU catalog: expected an array 'gpus'");
  }
  GpuCatalog catalog;
  std::set<std::string> seen;
  for (const json& entry : *gpus) {
    ASSIGN_OR_RETURN(GpuSpec spec, GpuSpecFromObject(entry));
    if (!seen.insert(absl::AsciiStrToLower(spec.model)).second) {
      return absl::InvalidArgumentError(absl::StrCat("GPU catalog: duplicate model ", spec.model));
    }
    catalog.gpus_.push_back(std::move(spec));
  }
  return catalog;
}

absl::StatusOr<GpuSpec> GpuCatalog::FindExact(absl::string_view model) const {
  const std::string wanted = absl::AsciiStrToLower(model);
  for (const GpuSpec& g : gpus_) {
    if (absl::AsciiStrToLower(g.model) == wanted) return g;
  }
  std::vector<std::string> known;
  for (const GpuSpec& g : gpus_) known.push_back(g.model);
  return absl::NotFoundError(absl::StrCat("unknown GPU '", model, "' (catalog has ",
                                          absl::StrJoin(known, ", "), ")"));
}

absl::StatusOr<GpuSpec> GpuCatalog::Find(absl::string_view model) const {
  absl::StatusOr<GpuSpec> exact = FindExact(model);
  if (exact.ok() || model.empty()) return exact;
  const std::string wanted = absl::AsciiStrToLower(model);
  // Whole '-' parts first, so that "L4" is the L4 and not also the L40S.
  std::vector<const GpuSpec*> whole_parts, prefixes;
  for (const GpuSpec& g : gpus_) {
    const std::string name = absl::AsciiStrToLower(g.model);
    if (!absl::StartsWith(name, wanted)) continue;
    prefixes.push_back(&g);
    if (name.size() == wanted.size() || name[wanted.size()] == '-') whole_parts.push_back(&g);
  }
  const std::vector<const GpuSpec*>& candidates = whole_parts.empty() ? prefixes : whole_parts;
  if (candidates.size() == 1) return *candidates[0];
  if (candidates.empty()) return exact.status();
  std::vector<std::string> names;
  for (const GpuSpec* g : candidates) names.push_back(g->model);
  return absl::InvalidArgumentError(absl::StrCat("GPU name '", model, "' is ambiguous: ",
                                                 absl::StrJoin(names, ", "),
                                                 " (give more of the name)"));
}

absl::StatusOr<GpuSpec> GpuCatalog::FindByVendorName(absl::string_view vendor_name) const {
  const std::string wanted = absl::AsciiStrToLower(vendor_name);
  for (const GpuSpec& g : gpus_) {
    if (absl::AsciiStrToLower(g.vendor_name) == wanted) return g;
  }
  return absl::NotFoundError(absl::StrCat("no catalog GPU reports the name '", vendor_name, "'"));
}

bool CompleteFromCatalog(const GpuCatalog& catalog, GpuSpec& spec) {
  // An agent's GPU model is a full name; a short one must not borrow a
  // neighbour's spec sheet.
  absl::StatusOr<GpuSpec> known = catalog.FindExact(spec.model);
  if (!known.ok()) return false;
  auto fill = [](auto& field, const auto& value) {
    if (field == std::decay_t<decltype(field)>{}) field = value;
  };
  fill(spec.vendor_name, known->vendor_name);
  fill(spec.architecture, known->architecture);
  fill(spec.compute_capability, known->compute_capability);
  fill(spec.sm_count, known->sm_count);
  fill(spec.boost_clock_mhz, known->boost_clock_mhz);
  fill(spec.memory_gib, known->memory_gib);
  fill(spec.memory_bus_width_bits, known->memory_bus_width_bits);
  fill(spec.memory_bandwidth_gbs, known->memory_bandwidth_gbs);
  fill(spec.fp32_tflops, known->fp32_tflops);
  fill(spec.tf32_tflops, known->tf32_tflops);
  fill(spec.fp16_tflops, known->fp16_tflops);
  fill(spec.bf16_tflops, known->bf16_tflops);
  fill(spec.fp64_tflops, known->fp64_tflops);
  fill(spec.l2_cache_mib, known->l2_cache_mib);
  fill(spec.interconnect, known->interconnect);
  fill(spec.tdp_watts, known->tdp_watts);
  fill(spec.nvlink_gbs, known->nvlink_gbs);
  fill(spec.nvlink_gpus, known->nvlink_gpus);
  fill(spec.pcie_gbs, known->pcie_gbs);
  fill(spec.network_gbs, known->network_gbs);
  return true;
}

std::string GpuSpecToJson(const GpuSpec& spec) { return GpuSpecObject(spec).dump(); }

absl::StatusOr<GpuSpec> GpuSpecFromJson(absl::string_view text) {
  ASSIGN_OR_RETURN(json doc, ParseJson(text));
  return GpuSpecFromObject(doc);
}

absl::StatusOr<Node> NodeFromSpecJson(absl::string_view text, const GpuCatalog& catalog) {
  absl::StatusOr<json> doc = ParseJson(text);
  if (!doc.ok()) return absl::InvalidArgumentError("node spec: malformed JSON");
  if (!doc->is_object()) return absl::InvalidArgumentError("node spec must be a JSON object");
  Node node;
  node.source = NodeSource::kSpecFile;
  if (absl::Status s = Field(*doc, "name", node.name, true); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("node spec: ", s.message()));
  }
  // As the store's limit on node names (a DNS name's length).
  if (node.name.empty() || node.name.size() > 253) {
    return absl::InvalidArgumentError("node spec: 'name' must be 1 to 253 bytes");
  }
  if (absl::Status s = Field(*doc, "count", node.gpu_count, false); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("node spec: ", s.message()));
  }
  if (node.gpu_count < 1 || node.gpu_count > kMaxGpusPerNode) {
    return absl::InvalidArgumentError(absl::StrCat("node spec: 'count' must be in [1, ",
                                                   kMaxGpusPerNode, "], got ", node.gpu_count));
  }
  if (auto labels = doc->find("labels"); labels != doc->end()) {
    if (!labels->is_object()) return absl::InvalidArgumentError("node spec: 'labels' must be an object");
    for (auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("node spec: label '", key, "' must be a string"));
      }
      node.labels[key] = value.get<std::string>();
    }
  }
  auto gpu = doc->find("gpu");
  if (gpu == doc->end()) return absl::InvalidArgumentError("node spec: missing field 'gpu'");
  if (gpu->is_string()) {
    ASSIGN_OR_RETURN(node.gpu, catalog.Find(gpu->get<std::string>()));
    node.source = NodeSource::kCatalog;
  } else {
    absl::StatusOr<GpuSpec> spec = GpuSpecFromObject(*gpu);
    if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("node spec: ", spec.status().message()));
    node.gpu = *std::move(spec);
  }
  return node;
}

std::string NodeToJson(const Node& n) {
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  const MeasuredRates& m = n.measured;
  json out{{"id", n.id},
           {"name", n.name},
           {"labels", n.labels},
           {"count", n.gpu_count},
           {"gpu", GpuSpecObject(n.gpu)},
           {"host",
            {{"hostname", n.host.hostname},
             {"cpu_model", n.host.cpu_model},
             {"cpu_cores", n.host.cpu_cores},
             {"driver_version", n.host.driver_version},
             {"cuda_version", n.host.cuda_version},
             {"torch_version", n.host.torch_version}}},
           {"measured",
            {{"memory_bandwidth_gbs", optional(m.memory_bandwidth_gbs)},
             {"fp32_tflops", optional(m.fp32_tflops)},
             {"tf32_tflops", optional(m.tf32_tflops)},
             {"fp16_tflops", optional(m.fp16_tflops)},
             {"bf16_tflops", optional(m.bf16_tflops)},
             {"fp64_tflops", optional(m.fp64_tflops)},
             {"launch_latency_us", optional(m.launch_latency_us)},
             {"h2d_pinned_gbs", optional(m.h2d_pinned_gbs)},
             {"h2d_pageable_gbs", optional(m.h2d_pageable_gbs)},
             {"cpu_single_thread_score", optional(m.cpu_single_thread_score)},
             {"idle_power_watts", optional(m.idle_power_watts)},
             {"dispatch_ops_per_s", optional(m.dispatch_ops_per_s)}}},
           {"source", n.source == NodeSource::kAgent      ? "agent"
                      : n.source == NodeSource::kSpecFile ? "spec"
                                                          : "catalog"},
           {"registered_at_us", n.registered_at_us}};
  return out.dump();
}

}  // namespace perfcast::models

#include "models/gpu_catalog.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/shipped.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace perfcast::models {

// Generated at build time from gpu_catalog.json.
extern const char kGpuCatalogJson[];

namespace {

using nlohmann::json;

// The members behind GpuSpecSchema(), in the same order.
using Member = std::variant<std::string GpuSpec::*, double GpuSpec::*, int GpuSpec::*>;
struct FieldDef {
  GpuSpecField field;
  Member member;
};

// Bounds well above any accelerator's: a value past them is a typo (a rate
// in FLOP/s instead of TFLOP/s, MiB instead of GiB), not hardware.
constexpr double kMaxRate = 1e5;       // TFLOP/s or TOP/s
constexpr double kMaxBandwidth = 1e5;  // GB/s

const std::vector<FieldDef>& Fields() {
  static const auto* const kFields = new std::vector<FieldDef>{
      {{"model", "", "catalog key or your name for the GPU, e.g. B200-SXM-180GB (required)"},
       &GpuSpec::model},
      {{"vendor", "", "NVIDIA, AMD, ..."}, &GpuSpec::vendor},
      {{"vendor_name", "", "the name the driver reports, e.g. NVIDIA B200"}, &GpuSpec::vendor_name},
      {{"architecture", "", "volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3, ..."},
       &GpuSpec::architecture},
      {{"compute_capability", "", "CUDA compute capability (9.0) or AMD gfx target (gfx942)"},
       &GpuSpec::compute_capability},
      {{"sm_count", "", "streaming multiprocessors (NVIDIA) or compute units (AMD)", 1e5},
       &GpuSpec::sm_count},
      {{"base_clock_mhz", "MHz", "base clock", 1e4}, &GpuSpec::base_clock_mhz},
      {{"boost_clock_mhz", "MHz", "boost (peak engine) clock", 1e4}, &GpuSpec::boost_clock_mhz},
      {{"memory_gib", "GiB", "device memory (required)", 1 << 16}, &GpuSpec::memory_gib},
      {{"memory_bus_width_bits", "bits", "memory bus width", 1 << 16},
       &GpuSpec::memory_bus_width_bits},
      {{"memory_bandwidth_gbs", "GB/s", "peak memory bandwidth, 10^9 B/s (required)",
        kMaxBandwidth},
       &GpuSpec::memory_bandwidth_gbs},
      {{"fp64_tflops", "TFLOP/s", "FP64, non-tensor", kMaxRate}, &GpuSpec::fp64_tflops},
      {{"fp32_tflops", "TFLOP/s", "FP32, non-tensor (CUDA cores / vector) (required)", kMaxRate},
       &GpuSpec::fp32_tflops},
      {{"tf32_tflops", "TFLOP/s", "TF32 tensor core, dense", kMaxRate}, &GpuSpec::tf32_tflops},
      {{"fp16_tflops", "TFLOP/s", "FP16 tensor core, dense, FP32 accumulate", kMaxRate},
       &GpuSpec::fp16_tflops},
      {{"bf16_tflops", "TFLOP/s", "BF16 tensor core, dense, FP32 accumulate", kMaxRate},
       &GpuSpec::bf16_tflops},
      {{"fp8_tflops", "TFLOP/s", "FP8 tensor core, dense", kMaxRate}, &GpuSpec::fp8_tflops},
      {{"int8_tops", "TOP/s", "INT8 tensor core, dense", kMaxRate}, &GpuSpec::int8_tops},
      {{"l2_cache_mib", "MiB", "L2 / last-level cache", 1 << 16}, &GpuSpec::l2_cache_mib},
      {{"tdp_watts", "W", "board power", 1e5}, &GpuSpec::tdp_watts},
      {{"interconnect", "", "links in words, e.g. NVLink 5 (18 links), 1.8 TB/s bidirectional"},
       &GpuSpec::interconnect},
      {{"nvlink_gbs", "GB/s", "NVLink / xGMI bandwidth per GPU and direction (0: none)",
        kMaxBandwidth},
       &GpuSpec::nvlink_gbs},
      {{"nvlink_gpus", "", "GPUs one NVLink / xGMI domain joins at nvlink_gbs", 1e5},
       &GpuSpec::nvlink_gpus},
      {{"pcie_generation", "", "PCIe generation of the host link: 3, 4, 5, 6", 10},
       &GpuSpec::pcie_generation},
      {{"pcie_gbs", "GB/s", "PCIe bandwidth to the host per direction", kMaxBandwidth},
       &GpuSpec::pcie_gbs},
      {{"network_gbs", "GB/s", "network between nodes per GPU (0: unknown)", kMaxBandwidth},
       &GpuSpec::network_gbs},
  };
  return *kFields;
}

const FieldDef* FindField(absl::string_view name) {
  for (const FieldDef& f : Fields()) {
    if (f.field.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> FieldNames() {
  std::vector<std::string> names;
  for (const FieldDef& f : Fields()) names.push_back(f.field.name);
  return names;
}

// "unknown key 'memory_gb' (did you mean 'memory_gib'?)"
std::string UnknownKey(absl::string_view key, absl::Span<const std::string> valid) {
  std::vector<std::string> nearest = NearestNames(key, valid, 1);
  return absl::StrCat("unknown key '", key, "'",
                      nearest.empty() ? absl::StrCat(" (valid keys: ", absl::StrJoin(valid, ", "), ")")
                                      : absl::StrCat(" (did you mean '", nearest[0], "'?)"));
}

absl::Status CheckKeys(const json& object, absl::Span<const std::string> valid) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(valid.begin(), valid.end(), it.key()) == valid.end()) {
      return absl::InvalidArgumentError(UnknownKey(it.key(), valid));
    }
  }
  return absl::OkStatus();
}

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

// The GPU object's fields by the schema; unknown keys other than `extra`
// (the catalog's "sources") are refused.
absl::StatusOr<GpuSpec> GpuSpecFromObject(const json& o, SpecOrigin origin,
                                          absl::Span<const std::string> extra = {}) {
  if (!o.is_object()) return absl::InvalidArgumentError("a GPU spec must be a JSON object");
  GpuSpec g;
  absl::Status s;
  std::vector<std::string> valid = FieldNames();
  valid.insert(valid.end(), extra.begin(), extra.end());
  s = CheckKeys(o, valid);
  for (const FieldDef& f : Fields()) {
    if (!s.ok()) break;
    const bool required = f.field.name == "model";
    std::visit([&](auto member) { s = Field(o, f.field.name.c_str(), g.*member, required); },
               f.member);
  }
  if (s.ok()) s = ValidateGpuSpec(g, origin);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU spec", g.model.empty() ? "" : absl::StrCat(" '", g.model, "'"), ": ",
                     s.message()));
  }
  return g;
}

absl::StatusOr<json> ParseJson(absl::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("malformed JSON");
  return doc;
}

json GpuSpecObject(const GpuSpec& g) {
  json out = json::object();
  for (const FieldDef& f : Fields()) {
    std::visit([&](auto member) { out[f.field.name] = g.*member; }, f.member);
  }
  return out;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> NearestNames(absl::string_view name,
                                      absl::Span<const std::string> candidates, size_t count) {
  // A name longer than any GPU's is not worth a quadratic comparison.
  const std::string wanted = absl::AsciiStrToLower(name.substr(0, 64));
  if (wanted.empty()) return {};
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : candidates) {
    const std::string lower = absl::AsciiStrToLower(candidate);
    size_t best = EditDistance(wanted, lower);
    for (size_t dash = lower.find('-'); dash != std::string::npos;
         dash = lower.find('-', dash + 1)) {
      best = std::min(best, EditDistance(wanted, absl::string_view(lower).substr(0, dash)));
    }
    if (best <= std::max<size_t>(1, (wanted.size() + 1) / 2)) scored.push_back({best, candidate});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

const std::vector<GpuSpecField>& GpuSpecSchema() {
  static const auto* const kSchema = [] {
    auto* schema = new std::vector<GpuSpecField>;
    for (const FieldDef& f : Fields()) schema->push_back(f.field);
    return schema;
  }();
  return *kSchema;
}

absl::Status ValidateGpuSpec(const GpuSpec& spec, SpecOrigin origin) {
  if (spec.model.empty()) return absl::InvalidArgumentError("'model' is empty");
  for (const FieldDef& f : Fields()) {
    double value = 0;
    if (const auto* d = std::get_if<double GpuSpec::*>(&f.member)) value = spec.**d;
    else if (const auto* i = std::get_if<int GpuSpec::*>(&f.member)) value = spec.**i;
    else continue;
    if (!std::isfinite(value) || value < 0 || value > f.field.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", f.field.name, "' must be in [0, ", f.field.max, "] ", f.field.unit,
                       ", got ", value));
    }
  }
  std::vector<const char*> required = {"memory_bandwidth_gbs", "fp32_tflops"};
  if (origin != SpecOrigin::kAgent) required.push_back("memory_gib");
  if (origin == SpecOrigin::kCatalog) required.push_back("sm_count");
  for (const char* name : required) {
    const FieldDef* f = FindField(name);
    const double value = std::visit(
        [&](auto member) -> double {
          if constexpr (std::is_same_v<decltype(member), std::string GpuSpec::*>) {
            return 0;
          } else {
            return spec.*member;
          }
        },
        f->member);
    if (!(value > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is required and must be positive"));
    }
  }
  if (origin == SpecOrigin::kSpecFile &&
      !(spec.tf32_tflops > 0 || spec.fp16_tflops > 0 || spec.bf16_tflops > 0 ||
        spec.fp8_tflops > 0 || spec.int8_tops > 0)) {
    return absl::InvalidArgumentError(
        "at least one tensor rate is required: tf32_tflops, fp16_tflops, bf16_tflops, "
        "fp8_tflops or int8_tops (dense, not with sparsity)");
  }
  if (origin == SpecOrigin::kCatalog && spec.vendor.empty()) {
    return absl::InvalidArgumentError("'vendor' is required");
  }
  return absl::OkStatus();
}

std::string SpecFileSchemaHelp() {
  std::string out =
      "Spec file (JSON): {\"name\": NODE, \"count\": GPUS (1-1024, default 1),\n"
      "  \"labels\": {KEY: VALUE, ...}, \"gpu\": CATALOG_NAME | {GPU fields}}\n"
      "No other keys: an unknown or misspelled key is refused with the nearest valid one.\n"
      "GPU fields (numbers finite and >= 0; 0 or absent = none/unknown; rates dense,\n"
      "not with sparsity; required: model, memory_gib, memory_bandwidth_gbs, fp32_tflops\n"
      "and at least one of tf32/fp16/bf16/fp8_tflops or int8_tops):\n";
  for (const GpuSpecField& f : GpuSpecSchema()) {
    absl::StrAppend(&out, "  ", f.name, f.unit.empty() ? "" : absl::StrCat(" [", f.unit, "]"),
                    ": ", f.meaning,
                    f.max > 0 ? absl::StrCat(" (at most ", f.max, ")") : "", "\n");
  }
  return out;
}

const GpuCatalog& GpuCatalog::BuiltIn() {
  static const GpuCatalog* const kCatalog =
      ShippedOrDie("gpu_catalog.json", Parse(kGpuCatalogJson));
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
  std::set<std::string> seen_vendor_names;
  const std::vector<std::string> extra = {"sources"};
  for (const json& entry : *gpus) {
    absl::StatusOr<GpuSpec> spec = GpuSpecFromObject(entry, SpecOrigin::kCatalog, extra);
    if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("GPU catalog: ", spec.status().message()));
    if (!seen.insert(absl::AsciiStrToLower(spec->model)).second) {
      return absl::InvalidArgumentError(absl::StrCat("GPU catalog: duplicate model ", spec->model));
    }
    // The agent names its GPU by the name the driver reports: one model each.
    if (!spec->vendor_name.empty() &&
        !seen_vendor_names.insert(absl::AsciiStrToLower(spec->vendor_name)).second) {
      return absl::InvalidArgumentError(absl::StrCat("GPU catalog: '", spec->model,
                                                     "': duplicate vendor_name '",
                                                     spec->vendor_name, "'"));
    }
    // Every value keeps its source: each key names known fields, and each
    // field has one (its own or "*").
    std::map<std::string, std::string> sources;
    auto listed = entry.find("sources");
    if (listed == entry.end() || !listed->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU catalog: '", spec->model, "' has no 'sources' object"));
    }
    for (auto it = listed->begin(); it != listed->end(); ++it) {
      if (!it->is_string() || it->get<std::string>().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU catalog: '", spec->model, "': source of '", it.key(), "' must be a text"));
      }
      for (absl::string_view key : absl::StrSplit(it.key(), ',')) {
        key = absl::StripAsciiWhitespace(key);
        if (key != "*" && FindField(key) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "GPU catalog: '", spec->model, "': sources: ", UnknownKey(key, FieldNames())));
        }
        sources[std::string(key)] = it->get<std::string>();
      }
    }
    if (!sources.count("*")) {
      for (const FieldDef& f : Fields()) {
        if (f.field.name != "model" && !sources.count(f.field.name)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "GPU catalog: '", spec->model, "': no source for '", f.field.name, "'"));
        }
      }
    }
    catalog.gpus_.push_back(*std::move(spec));
    catalog.sources_.push_back(std::move(sources));
  }
  return catalog;
}

absl::StatusOr<GpuSpec> GpuCatalog::FindExact(absl::string_view model) const {
  const std::string wanted = absl::AsciiStrToLower(model);
  for (const GpuSpec& g : gpus_) {
    if (absl::AsciiStrToLower(g.model) == wanted) return g;
  }
  std::vector<std::string> nearest = Nearest(model);
  return absl::NotFoundError(absl::StrCat(
      "unknown GPU '", model, "'",
      nearest.empty() ? " (`perfcast gpus list` shows the catalog)"
                      : absl::StrCat(" (nearest: ", absl::StrJoin(nearest, ", "),
                                     "; `perfcast gpus list` shows the catalog)")));
}

std::vector<std::string> GpuCatalog::Nearest(absl::string_view name, size_t count) const {
  std::vector<std::string> known;
  for (const GpuSpec& g : gpus_) known.push_back(g.model);
  return NearestNames(name, known, count);
}

std::string GpuCatalog::SourceOf(absl::string_view model, absl::string_view field) const {
  if (FindField(field) == nullptr) return "";
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (gpus_[i].model != model) continue;
    auto it = sources_[i].find(std::string(field));
    if (it == sources_[i].end()) it = sources_[i].find("*");
    return it == sources_[i].end() ? "" : it->second;
  }
  return "";
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
  for (const FieldDef& f : Fields()) {
    std::visit(
        [&](auto member) {
          using Value = std::decay_t<decltype(spec.*member)>;
          if (spec.*member == Value{}) spec.*member = (*known).*member;
        },
        f.member);
  }
  return true;
}

std::string GpuSpecToJson(const GpuSpec& spec) { return GpuSpecObject(spec).dump(); }

absl::StatusOr<GpuSpec> GpuSpecFromJson(absl::string_view text) {
  ASSIGN_OR_RETURN(json doc, ParseJson(text));
  return GpuSpecFromObject(doc, SpecOrigin::kAgent);
}

absl::StatusOr<Node> NodeFromSpecJson(absl::string_view text, const GpuCatalog& catalog) {
  absl::StatusOr<json> doc = ParseJson(text);
  if (!doc.ok()) return absl::InvalidArgumentError("node spec: malformed JSON");
  if (!doc->is_object()) return absl::InvalidArgumentError("node spec must be a JSON object");
  static const auto* const kKeys = new std::vector<std::string>{"name", "count", "labels", "gpu"};
  if (absl::Status s = CheckKeys(*doc, *kKeys); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("node spec: ", s.message()));
  }
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
    absl::StatusOr<GpuSpec> spec = GpuSpecFromObject(*gpu, SpecOrigin::kSpecFile);
    if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("node spec: ", spec.status().message()));
    node.gpu = *std::move(spec);
  }
  return node;
}

std::string NodeSpecToJson(const Node& n) {
  return json{{"name", n.name}, {"count", n.gpu_count}, {"labels", n.labels},
              {"gpu", GpuSpecObject(n.gpu)}}
      .dump();
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
             {"torch_version", n.host.torch_version},
             {"python_version", n.host.python_version},
             {"python_torch_version", n.host.python_torch_version}}},
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
             {"dispatch_ops_per_s", optional(m.dispatch_ops_per_s)},
             {"python_op_us", optional(m.python_op_us)},
             {"torchscript_op_us", optional(m.torchscript_op_us)}}},
           {"source", n.source == NodeSource::kAgent      ? "agent"
                      : n.source == NodeSource::kSpecFile ? "spec"
                                                          : "catalog"},
           {"registered_at_us", n.registered_at_us}};
  return out.dump();
}

}  // namespace perfcast::models

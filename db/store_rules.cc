#include "db/store_rules.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/utf8.h"
#include "models/profile_columns.h"

namespace perfcast::db {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::string_view NodeSourceName(models::NodeSource source) {
  switch (source) {
    case models::NodeSource::kCatalog: return "catalog";
    case models::NodeSource::kSpecFile: return "spec";
    case models::NodeSource::kAgent: return "agent";
  }
  return "catalog";
}

models::NodeSource ParseNodeSource(absl::string_view name) {
  if (name == "agent") return models::NodeSource::kAgent;
  if (name == "spec") return models::NodeSource::kSpecFile;
  return models::NodeSource::kCatalog;
}

bool IsLabelKey(absl::string_view key) {
  if (key.empty() || key.size() > 63) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != '/') return false;
  }
  return true;
}

// Names, versions and label values: short texts, not documents.
constexpr size_t kMaxTextLength = 256;

bool IsPrintableText(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    const size_t n = PrintableUtf8Length(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

absl::Status ValidateModelName(absl::string_view name) {
  if (name.size() > kMaxModelNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("model name is too long (", name.size(),
                                                   " bytes, at most ", kMaxModelNameLength, ")"));
  }
  if (!IsPrintableText(name)) {
    return absl::InvalidArgumentError(
        "model name must be printable UTF-8 text: no control characters or escape sequences");
  }
  return absl::OkStatus();
}

absl::Status ValidateNode(const models::Node& node) {
  if (node.name.empty()) return absl::InvalidArgumentError("node name is empty");
  if (node.name.size() > 253) return absl::InvalidArgumentError("node name is too long");
  if (!IsPrintableText(node.name)) {
    return absl::InvalidArgumentError(
        "node name must be printable UTF-8 text: no control characters or escape sequences");
  }
  if (node.gpu.model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "' has no GPU model"));
  }
  if (!IsPrintableText(node.gpu.model)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name, "': the GPU model must be printable text (no control characters)"));
  }
  if (node.gpu_count < 0 || node.gpu_count > models::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU count must be in [0, ", models::kMaxGpusPerNode, "], got ", node.gpu_count));
  }
  for (const auto& [key, value] : node.labels) {
    if (!IsLabelKey(key)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid label key '", key, "'"));
    }
    if (value.size() > kMaxTextLength) {
      return absl::InvalidArgumentError(absl::StrCat("label '", key, "' is longer than ",
                                                     kMaxTextLength, " bytes"));
    }
    if (!IsPrintableText(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("label '", key, "' must be printable text (no control characters)"));
    }
  }
  if (node.labels.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name, "' has more than 64 labels"));
  }
  const models::HostSpec& host = node.host;
  for (const std::string* text :
       {&node.gpu.model, &node.gpu.vendor_name, &node.gpu.architecture,
        &node.gpu.compute_capability, &node.gpu.interconnect, &node.gpu.vendor, &host.hostname, &host.cpu_model,
        &host.driver_version, &host.cuda_version, &host.torch_version, &host.python_version,
        &host.python_torch_version}) {
    if (text->size() > kMaxTextLength) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name, "' has a field longer than ", kMaxTextLength, " bytes"));
    }
  }
  const models::MeasuredRates& m = node.measured;
  for (const std::optional<double>* v :
       {&m.memory_bandwidth_gbs, &m.fp32_tflops, &m.tf32_tflops, &m.fp16_tflops, &m.bf16_tflops,
        &m.fp64_tflops, &m.launch_latency_us, &m.h2d_pinned_gbs, &m.h2d_pageable_gbs,
        &m.cpu_single_thread_score, &m.idle_power_watts, &m.dispatch_ops_per_s, &m.python_op_us,
        &m.torchscript_op_us}) {
    // Written so that NaN fails too.
    if (v->has_value() && (!(**v >= 0) || **v > 1e9)) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' has a negative or non-finite measured rate"));
    }
  }
  const models::GpuSpec& g = node.gpu;
  for (double v : {g.boost_clock_mhz, g.memory_gib, g.memory_bandwidth_gbs, g.fp32_tflops,
                   g.tf32_tflops, g.fp16_tflops, g.bf16_tflops, g.fp64_tflops, g.l2_cache_mib,
                   g.tdp_watts, g.nvlink_gbs, g.pcie_gbs, g.network_gbs, g.base_clock_mhz,
                   g.fp8_tflops, g.int8_tops}) {
    if (!(v >= 0) || v > 1e9) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' has a negative or non-finite hardware rate"));
    }
  }
  if (g.sm_count < 0 || g.memory_bus_width_bits < 0 || node.host.cpu_cores < 0 ||
      g.pcie_generation < 0 || g.pcie_generation > 100 ||
      g.nvlink_gpus < 0 || g.nvlink_gpus > models::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name, "' has a negative hardware count"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NodePageStart(const NodeFilter& filter) {
  if (filter.page_size < 1 || filter.page_size > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("page size must be within 1..1000, got ", filter.page_size));
  }
  int64_t after_id = 0;
  if (!filter.page_token.empty() &&
      (!absl::SimpleAtoi(filter.page_token, &after_id) || after_id < 0)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid page token '", filter.page_token, "'"));
  }
  for (const auto& [key, value] : filter.labels) {
    if (!IsLabelKey(key)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid label key '", key, "'"));
    }
  }
  return after_id;
}

bool IsHexHash(absl::string_view hash) {
  if (hash.size() != 32) return false;
  for (char c : hash) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

std::string ProfileColumnList(absl::string_view prefix) {
  std::string out;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", prefix, column.name);
  }
  return out;
}

int ProfileInsertColumnCount() {
  return kProfileKeyColumns + static_cast<int>(models::ProfileColumns().size());
}

absl::Status ImportState::Usable() const {
  if (failed) return absl::AbortedError("the import failed earlier and was rolled back");
  if (finished) return absl::FailedPreconditionError("the import has already ended");
  return absl::OkStatus();
}

absl::Status ImportState::Reject(int64_t index, absl::string_view reason) {
  summary.rejected.push_back({index, std::string(reason)});
  return absl::OkStatus();
}

}  // namespace perfcast::db

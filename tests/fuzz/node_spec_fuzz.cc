// Fuzzes node spec files (perfcast nodes register --spec file.json) and GPU
// spec JSON: any bytes as a document. Invariants: an accepted node has a
// name, a GPU count in [1, kMaxGpusPerNode] and finite, non-negative rates
// with positive bandwidth and FP32 rate; its JSON form parses back to the
// same node, and a GPU spec's JSON form parses back to the same spec.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/gpu_catalog.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using perfcast::models::GpuSpec;

void CheckSpec(const GpuSpec& g) {
  for (double v : {g.boost_clock_mhz, g.memory_gib, g.memory_bandwidth_gbs, g.fp32_tflops,
                   g.tf32_tflops, g.fp16_tflops, g.bf16_tflops, g.fp64_tflops, g.l2_cache_mib,
                   g.tdp_watts, g.nvlink_gbs, g.pcie_gbs, g.network_gbs, g.base_clock_mhz,
                   g.fp8_tflops, g.int8_tops}) {
    PERFCAST_FUZZ_CHECK(std::isfinite(v) && v >= 0, g.model);
  }
  PERFCAST_FUZZ_CHECK(g.memory_bandwidth_gbs > 0 && g.fp32_tflops > 0, g.model);
  PERFCAST_FUZZ_CHECK(!g.model.empty(), "a GPU spec has a model");
  absl::StatusOr<GpuSpec> again = perfcast::models::GpuSpecFromJson(perfcast::models::GpuSpecToJson(g));
  PERFCAST_FUZZ_CHECK(again.ok(), again.status().ToString());
  PERFCAST_FUZZ_CHECK(*again == g, g.model);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace models = perfcast::models;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const models::GpuCatalog& catalog = models::GpuCatalog::BuiltIn();

  absl::StatusOr<models::Node> node = models::NodeFromSpecJson(text, catalog);
  if (node.ok()) {
    PERFCAST_FUZZ_CHECK(!node->name.empty(), "a node has a name");
    PERFCAST_FUZZ_CHECK(node->gpu_count >= 1 && node->gpu_count <= models::kMaxGpusPerNode,
                        node->name);
    CheckSpec(node->gpu);
    absl::StatusOr<models::Node> again =
        models::NodeFromSpecJson(models::NodeSpecToJson(*node), catalog);
    PERFCAST_FUZZ_CHECK(again.ok(), again.status().ToString());
    PERFCAST_FUZZ_CHECK(again->name == node->name && again->gpu_count == node->gpu_count &&
                            again->labels == node->labels && again->gpu == node->gpu,
                        node->name);
  } else {
    PERFCAST_FUZZ_CHECK(!node.status().message().empty(), "an error says why");
  }

  absl::StatusOr<GpuSpec> spec = models::GpuSpecFromJson(text);
  if (spec.ok()) CheckSpec(*spec);
  return 0;
}

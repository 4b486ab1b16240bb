// The GPU spec catalog: data-centre accelerators as their vendors' spec
// sheets describe them (gpu_catalog.json, compiled into the binary). A node
// can be registered from a catalog name alone; such a node has no measured
// rates and is the "unseen GPU" case of prediction.
//
// Immutable after construction, so safe to share between threads.
#ifndef PERFCAST_MODELS_GPU_CATALOG_H_
#define PERFCAST_MODELS_GPU_CATALOG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"

namespace perfcast::models {

class GpuCatalog {
 public:
  // The catalog shipped with this build.
  static const GpuCatalog& BuiltIn();

  // Parses a catalog document {"gpus": [GpuSpec JSON, ...]}. InvalidArgument
  // for malformed JSON, missing or negative fields, or duplicate models.
  static absl::StatusOr<GpuCatalog> Parse(absl::string_view json);

  // Looks a model up by catalog name, case-insensitively ("h100-sxm5-80gb"),
  // or by a short name that names one model only: a prefix ending where a
  // '-' part ends ("H200", "L4", "A100-SXM4-80"), else any prefix. NotFound
  // names the known models; InvalidArgument lists the candidates of an
  // ambiguous short name ("H100": SXM5, PCIe or NVL).
  absl::StatusOr<GpuSpec> Find(absl::string_view model) const;
  // Only the full catalog name, case-insensitively; NotFound otherwise.
  absl::StatusOr<GpuSpec> FindExact(absl::string_view model) const;

  // Looks a GPU up by the name its driver reports (cudaDeviceProp::name,
  // e.g. "NVIDIA H100 80GB HBM3"). NotFound if no entry matches.
  absl::StatusOr<GpuSpec> FindByVendorName(absl::string_view vendor_name) const;

  const std::vector<GpuSpec>& gpus() const { return gpus_; }

 private:
  std::vector<GpuSpec> gpus_;
};

// Fills the spec-sheet fields of `spec` that are zero or empty (peak rates,
// clocks, L2, TDP, interconnect: what an agent reads from the device but not
// from the vendor) from the catalog entry of the same model. Returns false,
// changing nothing, when the catalog has no such model.
bool CompleteFromCatalog(const GpuCatalog& catalog, GpuSpec& spec);

// JSON form of hardware records, shared by spec files, the agent's
// fingerprint output and the CLI. Field names are those of the structs.
std::string GpuSpecToJson(const GpuSpec& spec);
// Parses one GpuSpec object. Required: model, memory_bandwidth_gbs > 0 and
// fp32_tflops > 0; every rate finite and non-negative. InvalidArgument names
// the field.
absl::StatusOr<GpuSpec> GpuSpecFromJson(absl::string_view json);

// A node spec file: {"name": ..., "count": 8, "labels": {...},
// "gpu": "H100-SXM5-80GB" | {GpuSpec}}. A GPU given by name is resolved
// against `catalog`.
absl::StatusOr<Node> NodeFromSpecJson(absl::string_view json, const GpuCatalog& catalog);
std::string NodeToJson(const Node& node);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_GPU_CATALOG_H_

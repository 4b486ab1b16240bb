// The GPU spec catalog: accelerators as their vendors' spec sheets describe
// them (gpu_catalog.json, compiled into the binary), each value with its
// source. A node can be registered from a catalog name alone; such a node has
// no measured rates and is the "unseen GPU" case of prediction.
//
// Immutable after construction, so safe to share between threads.
#ifndef PERFCAST_MODELS_GPU_CATALOG_H_
#define PERFCAST_MODELS_GPU_CATALOG_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/hardware.h"

namespace perfcast::models {

class GpuCatalog {
 public:
  // The catalog shipped with this build.
  static const GpuCatalog& BuiltIn();

  // Parses a catalog document {"gpus": [GpuSpec JSON with "sources", ...]}.
  // Each entry holds the fields of GpuSpecSchema() and "sources", an object
  // whose keys are field names (several joined by commas) or "*" for every
  // other field, and whose values name the datasheet and its date. Every field
  // must have a source. InvalidArgument for malformed JSON, unknown keys,
  // out-of-range or missing fields, missing sources, duplicate models or
  // duplicate vendor names.
  static absl::StatusOr<GpuCatalog> Parse(absl::string_view json);

  // Looks a model up by catalog name, case-insensitively ("h100-sxm5-80gb"),
  // or by a short name that names one model only: a prefix ending where a
  // '-' part ends ("H200", "L4", "A100-SXM4-80"), else any prefix. NotFound
  // names the nearest catalog models; InvalidArgument lists the candidates of
  // an ambiguous short name ("H100": SXM5, PCIe or NVL).
  absl::StatusOr<GpuSpec> Find(absl::string_view model) const;
  // Only the full catalog name, case-insensitively; NotFound otherwise.
  absl::StatusOr<GpuSpec> FindExact(absl::string_view model) const;

  // Looks a GPU up, case-insensitively, by the name its driver reports
  // (cudaDeviceProp::name, as nvidia-smi shows it: "NVIDIA H100 80GB HBM3",
  // "Tesla T4"). NotFound if no entry matches.
  absl::StatusOr<GpuSpec> FindByVendorName(absl::string_view vendor_name) const;

  // Where the catalog's value of `field` (a GpuSpecSchema() name) for
  // `model` (a full catalog name) comes from: the datasheet and its date.
  // Empty when the model or field is unknown.
  std::string SourceOf(absl::string_view model, absl::string_view field) const;

  // Up to `count` catalog models nearest to `name` (for "did you mean").
  std::vector<std::string> Nearest(absl::string_view name, size_t count = 3) const;

  const std::vector<GpuSpec>& gpus() const { return gpus_; }

 private:
  std::vector<GpuSpec> gpus_;
  // Parallel to gpus_: field name -> source, "*" for the rest.
  std::vector<std::map<std::string, std::string>> sources_;
};

// Up to `count` of `candidates` nearest to `name`, nearest first: by edit
// distance, case-insensitively, to each candidate or a leading run of its
// '-' parts ("B200" is near "B200-SXM-180GB"). Candidates farther than about
// half of the name's length are left out.
std::vector<std::string> NearestNames(absl::string_view name,
                                      absl::Span<const std::string> candidates,
                                      size_t count = 3);

// One field of a GPU spec: its JSON key, unit and what it means. The fields
// of GpuSpecSchema() are the only keys a GPU spec object may have.
struct GpuSpecField {
  std::string name;
  std::string unit;  // "TFLOP/s", "GB/s", "" for text
  std::string meaning;
  double max = 0;    // a larger number is a typo, not hardware (0: text)
};
const std::vector<GpuSpecField>& GpuSpecSchema();

// Who vouches for a spec: rules differ by origin.
enum class SpecOrigin {
  kCatalog,   // the shipped catalog: memory, SM count and vendor required
  kSpecFile,  // a user's spec file: memory, bandwidth, fp32 and at least one
              // tensor rate (tf32, fp16, bf16, fp8 or int8) required
  kAgent,     // an agent's fingerprint: bandwidth and fp32 required
};
// Checks every number of `spec` finite, non-negative and at most its field's
// max, integers whole, and the fields `origin` requires positive.
// InvalidArgument names the first bad field.
absl::Status ValidateGpuSpec(const GpuSpec& spec, SpecOrigin origin);

// The spec-file schema as text for `nodes register --help` and the README.
std::string SpecFileSchemaHelp();

// Fills the spec-sheet fields of `spec` that are zero or empty (peak rates,
// clocks, L2, TDP, interconnect: what an agent reads from the device but not
// from the vendor) from the catalog entry of the same model. Returns false,
// changing nothing, when the catalog has no such model.
bool CompleteFromCatalog(const GpuCatalog& catalog, GpuSpec& spec);

// JSON form of hardware records, shared by spec files, the agent's
// fingerprint output and the CLI. Field names are those of the structs.
std::string GpuSpecToJson(const GpuSpec& spec);
// Parses one GpuSpec object as an agent writes it: only GpuSpecSchema()
// keys; model, memory_bandwidth_gbs > 0 and fp32_tflops > 0 required; every
// number as ValidateGpuSpec(kAgent) checks. InvalidArgument names the field
// (an unknown key with the nearest valid one).
absl::StatusOr<GpuSpec> GpuSpecFromJson(absl::string_view json);

// A node spec file: {"name": ..., "count": 8, "labels": {...},
// "gpu": "H100-SXM5-80GB" | {GpuSpec}}, nothing else. A GPU given by name is
// resolved against `catalog`; a GPU object is checked as
// ValidateGpuSpec(kSpecFile). InvalidArgument names the bad key or field,
// and for an unknown key the nearest valid one.
absl::StatusOr<Node> NodeFromSpecJson(absl::string_view json, const GpuCatalog& catalog);
// The spec-file form of `node` (name, count, labels, gpu), which
// NodeFromSpecJson reads back.
std::string NodeSpecToJson(const Node& node);
std::string NodeToJson(const Node& node);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_GPU_CATALOG_H_

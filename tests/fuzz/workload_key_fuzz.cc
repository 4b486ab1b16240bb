// Fuzzes workload keys (stored in every store, read back from agent files):
// any bytes as a key. Invariants: a key that parses re-serialises to a key
// that parses to the same spec; normalising and describing a parsed spec
// either fails with a message or gives finite, non-negative totals.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/descriptor.h"
#include "models/workload.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace models = perfcast::models;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(text);
  if (!spec.ok()) return 0;
  const std::string key = spec->Key();
  absl::StatusOr<models::WorkloadSpec> again = models::ParseWorkloadKey(key);
  PERFCAST_FUZZ_CHECK(again.ok(), again.status().ToString());
  // Inference keys drop the optimizer, so compare through the key.
  PERFCAST_FUZZ_CHECK(again->Key() == key, key);

  absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(*spec);
  if (!d.ok()) {
    PERFCAST_FUZZ_CHECK(!d.status().message().empty(), key);
    return 0;
  }
  for (double v : {d->parameters, d->forward_flops, d->backward_flops, d->optimizer_flops,
                   d->forward_bytes, d->backward_bytes, d->optimizer_bytes, d->input_bytes,
                   d->kernel_launches}) {
    PERFCAST_FUZZ_CHECK(std::isfinite(v) && v >= 0, key);
  }
  for (const models::Operation& op : d->operations) {
    PERFCAST_FUZZ_CHECK(std::isfinite(op.flops) && op.flops >= 0 && std::isfinite(op.bytes) &&
                            op.bytes >= 0 && std::isfinite(op.count) && op.count >= 0,
                        key + " " + op.name);
  }
  // Normalising is idempotent: a stored spec keeps its key.
  absl::StatusOr<models::WorkloadSpec> normal = models::NormalizeSpec(d->spec);
  PERFCAST_FUZZ_CHECK(normal.ok() && normal->Key() == d->spec.Key(), key);
  return 0;
}

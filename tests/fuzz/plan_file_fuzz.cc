// Fuzzes agent plan files (perfcast-agent --plan file.yaml|json): the first
// byte picks the syntax (even: JSON, odd: YAML), the rest is the document.
// Invariants: a parsed plan has grids with non-empty value lists and sane
// timing; a plan of modest size expands to workload specs that are already
// normal (NormalizeSpec leaves their keys unchanged) and distinct.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "models/descriptor.h"
#include "profiler/plan.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace profiler = perfcast::profiler;
  if (size == 0) return 0;
  const bool yaml = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<profiler::RunPlan> plan =
      yaml ? profiler::ParsePlanYaml(text) : profiler::ParsePlanJson(text);
  if (!plan.ok()) {
    PERFCAST_FUZZ_CHECK(!plan.status().message().empty(), "an error says why");
    return 0;
  }
  PERFCAST_FUZZ_CHECK(!plan->grids.empty(), plan->name);
  PERFCAST_FUZZ_CHECK(std::isfinite(plan->max_minutes) && plan->max_minutes >= 0, plan->name);
  const profiler::TimingPolicy& t = plan->timing;
  PERFCAST_FUZZ_CHECK(t.min_iterations <= t.max_iterations && t.repeats >= 1, plan->name);
  PERFCAST_FUZZ_CHECK(std::isfinite(t.target_repeat_ms) && t.target_repeat_ms > 0, plan->name);
  PERFCAST_FUZZ_CHECK(std::isfinite(t.op_target_block_ms) && t.op_target_block_ms > 0, plan->name);
  int64_t total = 0;
  for (const profiler::Grid& grid : plan->grids) {
    PERFCAST_FUZZ_CHECK(!grid.batch_sizes.empty() && !grid.precisions.empty() &&
                            !grid.phases.empty() && !grid.optimizers.empty(),
                        grid.family);
    const int64_t grid_size = grid.Size();
    PERFCAST_FUZZ_CHECK(grid_size >= 1, grid.family);
    total = grid_size > 10'000 - total ? 10'001 : total + grid_size;
  }
  // Expanding a huge product would only measure the machine's memory.
  if (total > 10'000) return 0;
  absl::StatusOr<std::vector<perfcast::models::WorkloadSpec>> specs = profiler::ExpandPlan(*plan);
  if (!specs.ok()) return 0;
  PERFCAST_FUZZ_CHECK(static_cast<int64_t>(specs->size()) <= total, plan->name);
  std::set<std::string> keys;
  for (const perfcast::models::WorkloadSpec& spec : *specs) {
    absl::StatusOr<perfcast::models::WorkloadSpec> normal = perfcast::models::NormalizeSpec(spec);
    PERFCAST_FUZZ_CHECK(normal.ok() && normal->Key() == spec.Key(), spec.Key());
    PERFCAST_FUZZ_CHECK(keys.insert(spec.Key()).second, spec.Key());
  }
  return 0;
}

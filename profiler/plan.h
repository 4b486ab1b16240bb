// Run plans: which workloads the agent measures, and how long it may spend
// on each. A plan is a list of grids; each grid is the cartesian product of
// a family's parameter values, batch sizes, precisions, phases and
// optimizers. Built-in plans ("quick", "default", "full") cover every model
// family and operation class; a plan file (JSON or YAML, same structure)
// states its own grids:
//
//   name: my-plan
//   max_minutes: 5                 # optional wall-clock budget
//   timing: {warmup: 2, repeats: 3, target_repeat_ms: 40}
//   grids:
//     - family: lstm               # kind (model|op) follows from the family
//       params: {layers: [1, 2, 4], hidden: 256}
//       batch: [32, 128]
//       precision: [fp32, bf16-amp]
//       phase: [train, inference]
//       optimizer: adam
//     - family: gemm
//       params: {m: [256, 1024], n: 1024, k: 1024, batch: 1}
//       precision: [fp32, tf32]
//
// Plain C++, no LibTorch. Thread-safe: all functions are pure.
#ifndef PERFCAST_PROFILER_PLAN_H_
#define PERFCAST_PROFILER_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"

namespace perfcast::profiler {

// How many iterations the harness runs per configuration. Iteration counts
// adapt to the measured iteration time so that every configuration takes a
// bounded time yet small ones get enough samples for a stable median.
struct TimingPolicy {
  int warmup_iterations = 2;     // excluded from the statistics
  int repeats = 3;               // independent timed blocks (repeat_cv)
  int min_iterations = 2;        // per repeat
  int max_iterations = 50;       // per repeat
  double target_repeat_ms = 40;  // aim for this much timed work per repeat
  // Operation micro-benchmarks: `op_repeats` blocks of calls, each aiming
  // for `op_target_block_ms` of device time (at most `op_max_calls` calls).
  int op_repeats = 5;
  double op_target_block_ms = 2;
  int op_max_calls = 2000;

  friend bool operator==(const TimingPolicy&, const TimingPolicy&) = default;
};

// One grid: every combination of the listed values. Parameters a grid does
// not list take the family's defaults (models::NormalizeSpec).
struct Grid {
  models::WorkloadKind kind = models::WorkloadKind::kModel;
  std::string family;
  std::map<std::string, std::vector<int64_t>> params;
  std::vector<int64_t> batch_sizes = {1};
  std::vector<models::Precision> precisions = {models::Precision::kFp32};
  std::vector<models::Phase> phases = {models::Phase::kTrain};
  std::vector<std::string> optimizers = {"adam"};

  // Number of combinations (before validation).
  int64_t Size() const;
};

struct RunPlan {
  std::string name;
  TimingPolicy timing;
  double max_minutes = 0;  // 0: no budget of its own
  std::vector<Grid> grids;
};

// Names of the built-in plans, in increasing size.
const std::vector<std::string>& BuiltinPlanNames();

// A built-in plan: "quick" (< 1 minute on a 2-core CPU: tests and the demo),
// "default" (<= 10 minutes on one H100: >= 1,500 model and >= 5,000
// operation profiles), "full" (denser grids, hours) or "architectures" (the
// models users train and their operations, about 3 minutes on one H200; see
// architectures_plan.h). NotFound otherwise.
absl::StatusOr<RunPlan> BuiltinPlan(absl::string_view name);

// Parses a plan document (structure in the file comment). InvalidArgument
// names the offending field: unknown keys, wrong types, unknown families,
// precisions or phases, empty value lists.
absl::StatusOr<RunPlan> ParsePlanJson(absl::string_view text);
absl::StatusOr<RunPlan> ParsePlanYaml(absl::string_view text);

// Reads a plan file: YAML for ".yaml"/".yml", JSON otherwise.
// NotFound/PermissionDenied when it cannot be read; parse errors as above,
// prefixed with the path.
absl::StatusOr<RunPlan> LoadPlanFile(const std::string& path);

// Expands a plan into workload specs, grids in order, normalised with
// models::NormalizeSpec (defaults filled in). Duplicates are dropped.
// InvalidArgument for the first combination that is not a valid workload
// (unknown family or parameter, impossible size), naming the grid.
absl::StatusOr<std::vector<models::WorkloadSpec>> ExpandPlan(const RunPlan& plan);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PLAN_H_

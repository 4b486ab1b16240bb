// Run plans: which workloads the agent measures, and how long it may spend
// on each. A plan is a list of grids; each grid is the cartesian product of
// a family's parameter values, batch sizes, precisions, phases and
// optimizers. Built-in plans ("quick", "default", "full") cover every model
// family and operation class; a plan file (JSON or YAML, same structure)
// states its own grids:
//
//   name: my-plan
//   max_minutes: 5                 # optional wall-clock budget
//   timing: {warmup: 2, repeats: 5, target_repeat_ms: 100, passes: 2}
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

// How the harness times a configuration (method version 2, steady state).
// A model step runs from a ring of batches prepared before timing, with no
// host synchronisation between steps; CUDA events (the steady clock on a
// CPU) bracket blocks of steps. Warm-up blocks run until two consecutive
// ones agree within `warmup_tolerance` (or `max_warmup_blocks`); then
// `repeats` timed blocks, each of at least `target_repeat_ms` and
// `min_iterations` steps, split over `passes` passes of the run over the
// plan (the second in reverse order) so that drift of the machine shows in
// the stored spread instead of biasing the configurations measured last.
// Repeats are adaptive: a pass adds blocks (up to its share of
// `max_repeats`) while the median's estimated relative standard error over
// its blocks exceeds `target_median_error`: a host-bound step on a shared
// machine scatters from block to block as the host's dispatch rate moves
// (docs/code-evidence.md, "Host-bound steps").
struct TimingPolicy {
  int warmup_iterations = 2;     // single steps before the warm-up blocks
  int repeats = 5;               // timed blocks over all passes (repeat_cv)
  int max_repeats = 15;          // adaptive cap, over all passes (<= repeats: none)
  double target_median_error = 0.01;  // relative standard error of the median
  int min_iterations = 3;        // steps per block
  int max_iterations = 5000;     // steps per block
  double target_repeat_ms = 100;  // timed work per block
  int passes = 2;                // passes over the plan sharing the repeats
  double warmup_tolerance = 0.02;  // relative difference of consecutive warm-up blocks
  int max_warmup_blocks = 6;
  int prefetch_batches = 8;      // host batches in the prefetch ring
  // Operation micro-benchmarks: `op_repeats` blocks of calls (split over the
  // passes like `repeats`), each aiming for `op_target_block_ms` of device
  // time (at most `op_max_calls` calls).
  int op_repeats = 6;
  double op_target_block_ms = 2;
  int op_max_calls = 2000;

  friend bool operator==(const TimingPolicy&, const TimingPolicy&) = default;
};

// The timed blocks pass `pass` (0-based) of `passes` runs out of `total`:
// an even split, the earlier passes taking the remainder (5 over 2 passes:
// 3 then 2). At least 1, so every pass times a block even where `total` is
// smaller than `passes`.
int RepeatsInPass(int total, int passes, int pass);

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
// "default" (about 4.5 minutes on one H200 with both passes: 228 model and
// 260 operation configurations, each measured well), "full" (denser grids,
// hours) or "architectures" (the models users train and their operations,
// about 3 minutes on one H200; see architectures_plan.h). NotFound otherwise.
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

// The run loop: measures a list of workloads and writes each finished
// profile to the store in its own transaction, so that a crash, an
// out-of-memory configuration or an exhausted budget never loses the
// configurations already measured. Plain C++: the device work happens
// behind the Measurer interface.
#ifndef PERFCAST_PROFILER_RUNNER_H_
#define PERFCAST_PROFILER_RUNNER_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "profiler/measurer.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// The agent's self-description stored in every profile.
inline constexpr char kAgentVersion[] = "perfcast-agent 0.1.0";

struct RunOptions {
  // Wall-clock budget; no new configuration starts after it is spent (the
  // one running finishes). absl::InfiniteDuration() for none.
  absl::Duration budget = absl::InfiniteDuration();
  // One line per configuration; nullptr for silence.
  std::ostream* progress = nullptr;
  // Redraw a single status line (for a terminal) instead of one line each.
  bool progress_bar = false;
  // The clock; tests replace it to exercise the budget.
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

struct RunSummary {
  int64_t planned = 0;
  int64_t measured = 0;    // profiles stored
  int64_t duplicates = 0;  // measured but already in the store (same hash)
  int64_t skipped = 0;     // recorded with Store::RecordSkipped
  int64_t not_run = 0;     // left when the budget ran out
  bool budget_exhausted = false;
  double elapsed_s = 0;
};

// Registers (upserts) `node` in `store`, then measures `specs` in order
// with `measurer`. A configuration whose measurement fails (a status or an
// exception) or whose profile the store rejects is recorded as skipped
// with the reason, and the run goes on. Returns an error only when the
// store itself fails (nothing measured after that point is kept; all
// earlier configurations are).
absl::StatusOr<RunSummary> RunWorkloads(const std::vector<models::WorkloadSpec>& specs,
                                        const TimingPolicy& timing, const models::Node& node,
                                        Measurer& measurer, db::Store& store,
                                        const RunOptions& options);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_RUNNER_H_

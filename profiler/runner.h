// The run loop: measures a list of workloads in timing.passes passes (the
// first in plan order, the next reversed, and so on), pools the passes of
// each configuration into one profile and writes it to the store in its own
// transaction as soon as its last pass is done, so that a crash, an
// out-of-memory configuration or an exhausted budget never loses the
// configurations already written; a configuration the budget cut after its
// first pass is written with the repeats it has. Plain C++: the device work
// happens behind the Measurer interface.
#ifndef PERFCAST_PROFILER_RUNNER_H_
#define PERFCAST_PROFILER_RUNNER_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/types/span.h"

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
  int64_t partial = 0;     // stored with fewer passes than planned (budget)
  bool budget_exhausted = false;
  double elapsed_s = 0;
  // The host features measured at the end of the run (empty when the
  // measurer cannot), and what the run noticed about the machine: a
  // missing GPU sensor, drift between the passes or of the host.
  models::MeasuredRates end_host;
  std::vector<std::string> notes;
};

// Pools the passes of one configuration (in pass order) into its profile:
// iteration statistics over every timed block's mean step time (median_ms
// the median of the block means, the headline; count the steps timed),
// repeats = blocks, repeat_cv over the blocks, the phases and peak memory
// of the passes that have them, throughput and FLOP rates rescaled to the
// pooled median, the GPU state weighted by each pass's timed seconds, and
// the dispatch rate the median of the passes' host probes (where they have
// any). `passes` must not be empty.
models::Profile PoolPasses(absl::Span<const Measurement> passes);

// Sets the host features of `conditions` (dispatch rate, launch latency,
// CPU score, host->device bandwidth, the Python probe's costs) to the means over `samples` of the
// fields each has; a dispatch rate already there (the configuration's own
// probes, PoolPasses) is kept.
void SetHostConditions(absl::Span<const models::MeasuredRates> samples,
                       models::RunConditions& conditions);

// Registers (upserts) `node` in `store` (its measured host features are the
// run's start), then measures `specs` with `measurer` in timing.passes
// passes. A configuration whose first pass fails (a status or an exception)
// or whose profile the store rejects is recorded as skipped with the
// reason, and the run goes on; one whose later pass fails keeps the passes
// it has, with a note. Every profile carries method_version
// kCurrentMethodVersion and its run conditions (host features: means of
// the start and the re-measurements between passes taken before it was
// written). At the end the host is measured again, the node's host
// features become the means of start and end, and drift is noted. Returns
// an error only when the store itself fails (nothing measured after that
// point is kept; all earlier configurations are).
absl::StatusOr<RunSummary> RunWorkloads(const std::vector<models::WorkloadSpec>& specs,
                                        const TimingPolicy& timing, const models::Node& node,
                                        Measurer& measurer, db::Store& store,
                                        const RunOptions& options);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_RUNNER_H_

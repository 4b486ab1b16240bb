// The seam between the run loop and whatever executes workloads: LibTorch on
// a GPU or CPU in the agent, a fake in tests.
#ifndef PERFCAST_PROFILER_MEASURER_H_
#define PERFCAST_PROFILER_MEASURER_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "profiler/nvml.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// One pass of one configuration. `profile` holds the workload, the
// statistics of this pass's blocks, phases (where this pass ran the
// instrumented steps), derived rates and peak memory; the run loop pools
// the passes of a configuration from `block_ms` and `steps`.
struct Measurement {
  models::Profile profile;
  std::vector<double> block_ms;  // mean time per step (per call) of each timed block
  int64_t steps = 0;             // steps (calls) timed over all blocks
  GpuState gpu;
  // The host's framework dispatch rate (ops/s) sampled right before timed
  // blocks (each block of a model, each pass of an operation): the host
  // state this pass's steps ran under. Empty where the measurer does not
  // sample it; the run then stores the run's start/end mean.
  std::vector<double> dispatch_ops_per_s;
};

// Measures one workload at a time. Not thread-safe: measurements share a
// device and must not overlap.
class Measurer {
 public:
  virtual ~Measurer() = default;

  // Runs pass `pass` (0-based, of timing.passes) of `spec` (normalised)
  // under `timing`: RepeatsInPass() timed blocks, and on pass 0 the
  // instrumented steps that fill the phases. The caller sets the node,
  // timestamp, agent version, method version and hash. Errors mean the
  // configuration was skipped, and the run goes on: ResourceExhausted (out
  // of memory), Unimplemented (precision or family not supported on this
  // device), InvalidArgument (the spec cannot be built), Internal (the
  // framework failed).
  virtual absl::StatusOr<Measurement> Measure(const models::WorkloadSpec& spec,
                                              const TimingPolicy& timing, int pass) = 0;

  // Re-measures the host features (dispatch rate, launch latency,
  // single-thread CPU score, host->device bandwidth) into the matching
  // fields of MeasuredRates; the run loop calls it between passes and at the
  // end to detect a machine that changes during the run. Unimplemented when
  // the measurer cannot.
  virtual absl::StatusOr<models::MeasuredRates> MeasureHost() {
    return absl::UnimplementedError("no host measurement");
  }
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_MEASURER_H_

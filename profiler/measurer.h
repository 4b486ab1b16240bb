// The seam between the run loop and whatever executes workloads: LibTorch on
// a GPU or CPU in the agent, a fake in tests.
#ifndef PERFCAST_PROFILER_MEASURER_H_
#define PERFCAST_PROFILER_MEASURER_H_

#include "absl/status/statusor.h"
#include "models/profile.h"
#include "models/workload.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// Measures one workload at a time. Not thread-safe: measurements share a
// device and must not overlap.
class Measurer {
 public:
  virtual ~Measurer() = default;

  // Runs `spec` (normalised) under `timing` and returns its profile with
  // the workload, statistics, phases and derived rates filled in; the
  // caller sets the node, timestamp, agent version and hash. Errors mean
  // the configuration was skipped, and the run goes on:
  // ResourceExhausted (out of memory), Unimplemented (precision or family
  // not supported on this device), InvalidArgument (the spec cannot be
  // built), Internal (the framework failed).
  virtual absl::StatusOr<models::Profile> Measure(const models::WorkloadSpec& spec,
                                                  const TimingPolicy& timing) = 0;
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_MEASURER_H_

// The agent's own cost: the per-iteration time the harness reports for a
// training step against a bare LibTorch loop of the same proxy model (same
// data path, same synchronisation per iteration, no events, no bookkeeping).
// The goal is a ratio within 1.02.
#ifndef PERFCAST_PROFILER_OVERHEAD_H_
#define PERFCAST_PROFILER_OVERHEAD_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/workload.h"
#include "profiler/device_options.h"

namespace perfcast::profiler {

struct OverheadOptions {
  models::WorkloadSpec spec = [] {
    models::WorkloadSpec s;
    s.family = "lstm";
    s.batch_size = 64;
    return s;
  }();
  int iterations = 100;  // per measurement, after a warm-up
};

struct OverheadReport {
  std::string workload_key;
  double agent_ms = 0;  // median iteration time the harness reports
  double bare_ms = 0;   // median of the bare loop
  double ratio = 0;     // agent_ms / bare_ms
};

// Runs both loops alternately (to cancel drift) and compares their medians.
// InvalidArgument for an invalid spec; Unimplemented without proxy models;
// errors of Device::Open.
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device,
                                               const OverheadOptions& options);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_OVERHEAD_H_

// The agent's own cost: the steady-state step time the harness reports (a
// block of steps between device marks, as proxy_harness times it) against
// a bare LibTorch loop of the same proxy model (the same steps, the host's
// clock around the block and one synchronisation at its end, nothing
// else). Pairs alternate which side runs first, so slow drift cancels; the
// goal is a median ratio within 1.01.
#ifndef PERFCAST_PROFILER_OVERHEAD_H_
#define PERFCAST_PROFILER_OVERHEAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiler/device_options.h"

namespace perfcast::profiler {

struct OverheadOptions {
  // Model families, each trained in fp32 with its default parameters.
  std::vector<std::string> families = {"lstm", "cnn", "transformer", "resnet"};
  int64_t batch = 64;
  int pairs = 24;          // over all families, split evenly (at least 1 each)
  double block_ms = 100;   // timed work of each side of a pair
};

struct OverheadPair {
  std::string workload_key;
  double agent_ms = 0;  // per step, the harness's block timing
  double bare_ms = 0;   // per step, the bare loop
};

struct OverheadReport {
  std::vector<OverheadPair> pairs;
  double median_ratio = 0;  // of agent_ms / bare_ms over the pairs
  double p10_ratio = 0;
  double p90_ratio = 0;
};

// InvalidArgument for an unknown or non-model family or a bad count;
// Unimplemented without proxy models; errors of Device::Open and of the
// framework (out of memory, ...).
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device,
                                               const OverheadOptions& options);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_OVERHEAD_H_

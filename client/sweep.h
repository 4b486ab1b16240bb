// What-if sweeps for `perfcast predict --sweep key=v1,v2 ...`: the grid of
// every combination of the swept values, priced in one PredictBatch stream,
// printed as one table (or JSON lines) with a column per swept key and the
// job's cost at the shipped prices.
#ifndef PERFCAST_CLIENT_SWEEP_H_
#define PERFCAST_CLIENT_SWEEP_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli_error.h"
#include "client/client_context.h"
#include "client/predict_query.h"

namespace perfcast::client {

// The keys a sweep may vary; "param.NAME" varies architecture parameter NAME.
inline constexpr char kSweepKeys[] =
    "batch, gpu, node, precision, phase, optimizer, samples, epochs, iterations, hf-config, "
    "torchvision, seq-len, image, gpu-count (= data-parallel), data-parallel, tensor-parallel, "
    "pipeline-parallel, micro-batches, zero, activation-checkpointing, framework, loop, param.NAME";
// The most grid points one call prices.
inline constexpr size_t kMaxSweepPoints = 10'000;

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// Parses "key=v1,v2,..." specs. InvalidArgument for a malformed spec, an
// unknown or repeated key, an empty value, or a grid above kMaxSweepPoints.
absl::StatusOr<std::vector<SweepAxis>> ParseSweeps(const std::vector<std::string>& specs);

// Every combination, the first axis varying slowest: each point holds one
// (key, value) per axis.
std::vector<std::vector<std::pair<std::string, std::string>>> SweepGrid(
    const std::vector<SweepAxis>& axes);

// `base` with the point's values applied (gpu clears node and vice versa).
// InvalidArgument for a value that is not a number where one is needed.
absl::StatusOr<PredictFlags> ApplySweepPoint(
    const PredictFlags& base, const std::vector<std::pair<std::string, std::string>>& point);

// Runs the sweep through PredictBatch and prints it. Exit code 3 when some
// points failed (each says why, e.g. "does not fit").
std::optional<CliError> RunSweep(ClientContext& context, const PredictFlags& flags);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_SWEEP_H_

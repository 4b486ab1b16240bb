// The layouts a recommendation searches: every valid way to lay one training
// job over a number of GPUs, and the GPU counts a user asks for.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_LAYOUT_SEARCH_H_
#define PERFCAST_PREDICTOR_LAYOUT_SEARCH_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"
#include "predictor/layout.h"

namespace perfcast::predictor {

// The most distinct GPU counts one search takes.
inline constexpr int kMaxGpuCounts = 64;

// Every layout of `spec` on exactly `gpus` GPUs run by `framework` that
// ValidateLayout(spec, layout, max_gpus) accepts: each N × T × P = gpus,
// every ZeRO stage (0 with one replica), with and without activation
// checkpointing, and with pipeline stages every micro-batch count that
// divides the replica's batch (without, one micro-batch: gradient
// accumulation only repeats the step). Each layout once, in the order of
// T, P, N, M, ZeRO, checkpointing. Empty when none is valid.
std::vector<ParallelLayout> EnumerateLayouts(const models::WorkloadSpec& spec,
                                             Framework framework, int gpus, int max_gpus);

// "8", "1-64", "1,2,4,8", "1-4,8,16" (spaces allowed around the parts): the
// GPU counts, ascending, each once. InvalidArgument naming --gpu-count for
// empty text or parts, a count outside [1, models::kMaxGpusPerNode], a
// range whose end is below its start, anything but digits, or more than
// kMaxGpuCounts counts.
absl::StatusOr<std::vector<int>> ParseGpuCounts(absl::string_view text);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_LAYOUT_SEARCH_H_

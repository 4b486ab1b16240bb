// Starts the agent's worker processes for multi-GPU measurements: one copy of
// this program per rank, each with its rank, the group size and the
// rendezvous port on its command line and, on GPUs, its own GPU as the only
// visible one. Plain POSIX; no LibTorch.
//
// Thread-compatible: call from one thread at a time.
#ifndef PERFCAST_PROFILER_LAUNCHER_H_
#define PERFCAST_PROFILER_LAUNCHER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfcast::profiler {

// A free TCP port on 127.0.0.1 (bound and released, so another process may
// take it first; the rendezvous then fails and says so). Internal on a
// socket error.
absl::StatusOr<int> FreeLocalPort();

// The GPU a rank sees: the rank-th entry of `visible` (the launcher's own
// CUDA_VISIBLE_DEVICES, comma-separated) or, when that is empty, the rank
// itself. OutOfRange when `visible` lists fewer GPUs than ranks.
absl::StatusOr<std::string> GpuOfRank(const std::string& visible, int rank);

// Runs `program` `world` times with WorkerArgs(base_args, {rank, world,
// port}) and WorkerEnvironment() (plus CUDA_VISIBLE_DEVICES = GpuOfRank when
// `one_gpu_each`), and waits for all. When a worker fails the others are
// terminated. Internal names the first failing rank and how it ended.
absl::Status LaunchWorkers(const std::string& program, const std::vector<std::string>& base_args,
                           int world, bool one_gpu_each);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_LAUNCHER_H_

// The plain parts of the agent's multi-GPU measurements (no LibTorch): which
// all-reduce sizes to run, how many calls a timed block holds, the bus
// bandwidth of a timed all-reduce, and the command lines of the worker
// processes the launcher starts (one per GPU).
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PROFILER_COLLECTIVES_PLAN_H_
#define PERFCAST_PROFILER_COLLECTIVES_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"

namespace perfcast::profiler {

// Message sizes from "4K:1G" (powers of 4 from 4 KiB to 1 GiB, the default),
// "1M" (one size) or "64K,1M,16M" (a list). Suffixes K, M, G are binary.
// InvalidArgument for a size below 4 bytes or above 2^36, a range whose end
// is below its start, or malformed text.
absl::StatusOr<std::vector<int64_t>> ParseMessageSizes(absl::string_view text);

// The allreduce workloads of a benchmark over `gpus` GPUs, one per size.
std::vector<models::WorkloadSpec> AllReduceSpecs(const std::vector<int64_t>& sizes, int gpus);

// Calls per timed block: about 1 GiB of messages, at least 5 and at most
// 200. Every rank derives the same count from the size alone, because a
// collective deadlocks unless all ranks issue the same calls.
int CallsPerBlock(int64_t bytes);

// Where a worker finds its peers.
struct WorkerPlace {
  int rank = 0;
  int world = 1;
  int port = 0;  // the rendezvous store's TCP port on 127.0.0.1
};

// The worker command line for `place`: `base_args` (the subcommand and its
// user flags, without the program name) followed by --rank, --world and
// --port.
std::vector<std::string> WorkerArgs(const std::vector<std::string>& base_args,
                                    const WorkerPlace& place);

// The environment every worker gets on top of the launcher's: NVLink
// SHARP (multicast) stays off, as the machines this runs on require.
std::vector<std::pair<std::string, std::string>> WorkerEnvironment();

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_COLLECTIVES_PLAN_H_

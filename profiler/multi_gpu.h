// The agent's multi-GPU subcommands, as one worker process runs them (the
// launcher starts one per GPU; see launcher.h):
//  - collectives: times sum all-reduces over the group for each message
//    size; rank 0 stores them as profiles of the "allreduce" operation
//    family (bytes, gpus) on this node, from which the predictor fits the
//    node's bus bandwidth and latency.
//  - ddp: a data-parallel proxy: one model workload, its global batch split
//    over the ranks, gradients averaged in DDP's 25 MiB buckets from
//    gradient hooks (overlapping backward); rank 0 first times the same
//    per-GPU step alone, then the data-parallel step, and appends both to a
//    JSON-lines file (validation data for the parallel predictor).
//
// Internal to perfcast_profiler.
#ifndef PERFCAST_PROFILER_MULTI_GPU_H_
#define PERFCAST_PROFILER_MULTI_GPU_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/workload.h"
#include "profiler/collectives_plan.h"
#include "profiler/device_options.h"

namespace perfcast::profiler {

struct CollectivesFlags {
  std::string sizes = "4K:1G";
  std::string out = "perfcast-node.sqlite";  // rank 0's store
  std::string name;                          // node name
  int node_gpus = 0;                         // GPUs of the node; 0: the group size
};

// InvalidArgument for bad sizes; the errors of Communicator::Join, of the
// fingerprint and of the store.
absl::Status RunCollectivesWorker(const DeviceOptions& device, const WorkerPlace& place,
                                  const CollectivesFlags& flags);

struct DdpFlags {
  std::string workload;  // a workload key; its batch is the global batch
  std::string out = "ddp.jsonl";
  int warmup = 3;
  int steps = 10;
  double bucket_mib = 25;
};

// The workload of `flags`, normalised, if a group of `world` can run it:
// InvalidArgument for a malformed key, a workload that is not a model in
// training, a global batch that `world` does not divide, or bad counts.
absl::StatusOr<models::WorkloadSpec> CheckDdpFlags(const DdpFlags& flags, int world);

// Errors of CheckDdpFlags; FailedPrecondition when this build has no proxy
// models; otherwise as RunCollectivesWorker.
absl::Status RunDdpWorker(const DeviceOptions& device, const WorkerPlace& place,
                          const DdpFlags& flags);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_MULTI_GPU_H_

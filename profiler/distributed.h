// The agent's multi-GPU measurements over LibTorch's c10d backends: NCCL
// between GPUs and Gloo between CPU processes (so that the same code runs,
// and is tested, without GPUs). One process per rank, each seeing its own
// GPU as cuda:0 (the launcher sets CUDA_VISIBLE_DEVICES); ranks meet through
// a TCP store on 127.0.0.1 that rank 0 hosts.
//
// Built only where the LibTorch headers and libraries carry a backend
// (PERFCAST_AGENT_NCCL, PERFCAST_AGENT_GLOO); elsewhere Join says so.
//
// Internal to perfcast_profiler (includes LibTorch). Not thread-safe, except
// that gradient hooks may fire on LibTorch's autograd threads.
#ifndef PERFCAST_PROFILER_DISTRIBUTED_H_
#define PERFCAST_PROFILER_DISTRIBUTED_H_

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/profile.h"
#include "models/workload.h"
#include "profiler/collectives_plan.h"
#include "profiler/device.h"
#include "profiler/measurer.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// A member of a process group.
class Communicator {
 public:
  // Joins the group at `place`: NCCL on a CUDA device, Gloo on the CPU.
  // Collectives that do not finish within `timeout` fail rather than hang.
  // FailedPrecondition when this build lacks the backend; Unavailable when
  // the peers do not meet (LibTorch's error text).
  static absl::StatusOr<std::unique_ptr<Communicator>> Join(const WorkerPlace& place,
                                                            const Device& device,
                                                            std::chrono::milliseconds timeout);

  virtual ~Communicator() = default;

  // Starts a sum all-reduce of `tensor` in place; the returned function
  // blocks until it is done (on a GPU: until the current stream waits for
  // it). Throws what LibTorch throws.
  virtual std::function<void()> AllReduce(torch::Tensor tensor) = 0;
  // Returns once every rank has called it.
  virtual void Barrier() = 0;

  int rank() const { return place_.rank; }
  int world() const { return place_.world; }

 protected:
  explicit Communicator(const WorkerPlace& place) : place_(place) {}

 private:
  WorkerPlace place_;
};

// Times all-reduce workloads (family "allreduce"; its `gpus` must be the
// group's size). Every rank must measure the same specs and passes in the
// same order; the profile each returns is its own view, rank 0's is the one
// kept.
class AllReduceMeasurer : public Measurer {
 public:
  AllReduceMeasurer(const Device& device, Communicator& communicator)
      : device_(device), communicator_(communicator) {}

  absl::StatusOr<Measurement> Measure(const models::WorkloadSpec& spec,
                                      const TimingPolicy& timing, int pass) override;

 private:
  const Device& device_;
  Communicator& communicator_;
};

// Gradient averaging as PyTorch DDP does it: parameters packed in reverse
// order into buckets of `bucket_bytes`, each bucket's all-reduce started from
// a gradient hook as soon as its last gradient arrives, so that it overlaps
// the rest of backward. Finish() waits for every bucket and writes the
// averaged gradients back.
class GradientBuckets {
 public:
  GradientBuckets(Communicator& communicator, const std::vector<torch::Tensor>& parameters,
                  double bucket_bytes);
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // After backward, before the optimizer step.
  void Finish();
  int buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;  // elements into the bucket's buffer
    torch::Tensor parameter;
  };
  struct Bucket {
    torch::Tensor buffer;
    int pending = 0;  // gradients still to arrive this step
    int size = 0;     // parameters in the bucket
    std::function<void()> wait;
  };

  void Arrived(size_t slot, const torch::Tensor& grad);

  Communicator& communicator_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::mutex mutex_;  // hooks may run on autograd threads
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_DISTRIBUTED_H_

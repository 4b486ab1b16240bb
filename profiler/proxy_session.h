// One proxy model set up for timing on a device: the network in the
// workload's precision, its optimizer (training), its synthetic data source,
// a prefetch ring of host batches and the events that time blocks of steps
// and each phase. SteadyStep() is what a training loop with a DataLoader
// runs (the next prepared batch copied without blocking, forward, backward,
// optimizer, no host synchronisation); TimedBlockMs() times a block of them;
// InstrumentedStep() splits one step fed by the generator into its phases.
//
// Internal to perfcast_profiler (includes LibTorch). Not thread-safe.
#ifndef PERFCAST_PROFILER_PROXY_SESSION_H_
#define PERFCAST_PROFILER_PROXY_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "models/descriptor.h"
#include "models/torch/optimizers.h"
#include "models/torch/proxy.h"
#include "models/workload.h"
#include "profiler/device.h"

namespace perfcast::profiler {

// Milliseconds of one iteration: the whole (host clock, up to the end of the
// device work) and its phases (data load by the host clock, the others by
// device events; backward and optimizer are 0 for inference).
struct StepTimes {
  double total_ms = 0;
  double data_load_ms = 0;
  double h2d_ms = 0;
  double forward_ms = 0;
  double backward_ms = 0;
  double optimizer_ms = 0;
};

class ProxySession {
 public:
  // Builds the proxy of a model workload on `device` (pinned host batches on
  // a GPU), in ModelDtype(precision), with its optimizer for training as
  // PyTorch runs it on that device (models/torch/optimizers.h). Errors of MakeProxy; exceptions from LibTorch propagate (the
  // caller runs under RunGuarded).
  static absl::StatusOr<std::unique_ptr<ProxySession>> Create(const Device& device,
                                                             const models::WorkloadSpec& spec,
                                                             uint64_t seed);
  ProxySession(const ProxySession&) = delete;
  ProxySession& operator=(const ProxySession&) = delete;

  // Generates `batches` (>= 1) batches into the prefetch ring (pinned host
  // memory on a GPU), replacing its contents, as a DataLoader's workers
  // would ahead of the loop. Returns the generator's mean milliseconds per
  // batch.
  double Prefetch(int batches);
  // One steady-state step on the next batch of the ring (Prefetch first):
  // non-blocking copy to the device, forward (+ loss, backward, optimizer
  // step); enqueues the work and returns without synchronising.
  void SteadyStep();
  // `steps` steady-state steps between two marks on the device's timeline;
  // waits for the last and returns the mean milliseconds per step.
  double TimedBlockMs(int steps);
  // One step on a freshly generated batch with a mark between phases;
  // synchronises once, at its end.
  StepTimes InstrumentedStep();

  // Runs after each training backward, before the optimizer (and inside the
  // backward phase's time): a data-parallel run averages gradients here.
  void set_after_backward(std::function<void()> hook) { after_backward_ = std::move(hook); }
  std::vector<torch::Tensor> parameters() const { return proxy_.model->Parameters(); }

  const models::WorkloadDescriptor& descriptor() const { return proxy_.descriptor; }
  int64_t samples_per_epoch() const { return proxy_.data->samples_per_epoch(); }

 private:
  ProxySession(const Device& device, const models::WorkloadSpec& spec,
               models::torch_proxy::Proxy proxy);

  // One step on `batch`; `mark` is called after the copy and each phase.
  template <typename Mark>
  void Run(const models::torch_proxy::HostBatch& batch, Mark&& mark);

  const Device& device_;
  const models::WorkloadSpec spec_;
  const bool train_;
  MathModeScope math_;  // for the session's lifetime
  models::torch_proxy::Proxy proxy_;
  std::unique_ptr<models::torch_proxy::StepOptimizer> optimizer_;
  // FP16 autocast needs loss scaling: a static scale, with the unscale and
  // overflow check that torch.cuda.amp.GradScaler runs each step.
  std::optional<torch::Tensor> loss_scale_, inverse_scale_, found_inf_;
  std::vector<models::torch_proxy::HostBatch> ring_;
  size_t next_ = 0;  // the ring's batch for the next steady step
  Timeline timeline_;
  std::function<void()> after_backward_;
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PROXY_SESSION_H_

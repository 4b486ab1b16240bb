// One proxy model set up for timing on a device: the network in the
// workload's precision, its optimizer (training), its synthetic data source
// and the events that time each phase. Step() runs one instrumented
// iteration; BareStep() the same iteration without any instrumentation, as
// the reference for the agent's overhead.
//
// Internal to perfcast_profiler (includes LibTorch). Not thread-safe.
#ifndef PERFCAST_PROFILER_PROXY_SESSION_H_
#define PERFCAST_PROFILER_PROXY_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "models/descriptor.h"
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
  // a GPU), in ModelDtype(precision), with Adam or SGD (momentum 0.9) for
  // training. Errors of MakeProxy; exceptions from LibTorch propagate (the
  // caller runs under RunGuarded).
  static absl::StatusOr<std::unique_ptr<ProxySession>> Create(const Device& device,
                                                             const models::WorkloadSpec& spec,
                                                             uint64_t seed);
  ProxySession(const ProxySession&) = delete;
  ProxySession& operator=(const ProxySession&) = delete;

  // One timed iteration; synchronises once, at its end.
  StepTimes Step();
  // One iteration as a plain LibTorch loop would run it: no events, no
  // clocks; synchronises once at its end like Step().
  void BareStep();

  // Runs after each training backward, before the optimizer (and inside the
  // backward phase's time): a data-parallel run averages gradients here.
  void set_after_backward(std::function<void()> hook) { after_backward_ = std::move(hook); }
  std::vector<torch::Tensor> parameters() const { return proxy_.model->Parameters(); }

  const models::WorkloadDescriptor& descriptor() const { return proxy_.descriptor; }
  int64_t samples_per_epoch() const { return proxy_.data->samples_per_epoch(); }

 private:
  ProxySession(const Device& device, const models::WorkloadSpec& spec,
               models::torch_proxy::Proxy proxy);

  // The iteration's phases; `mark` is called between them.
  template <typename Mark>
  void Iterate(Mark&& mark);

  const Device& device_;
  const models::WorkloadSpec spec_;
  const bool train_;
  MathModeScope math_;  // for the session's lifetime
  models::torch_proxy::Proxy proxy_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // FP16 autocast needs loss scaling: a static scale, with the unscale and
  // overflow check that torch.cuda.amp.GradScaler runs each step.
  std::optional<torch::Tensor> loss_scale_, inverse_scale_, found_inf_;
  Timeline timeline_;
  std::function<void()> after_backward_;
};

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PROXY_SESSION_H_

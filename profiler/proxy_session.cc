#include "profiler/proxy_session.h"
#include "base/status_macros.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace perfcast::profiler {
namespace {

using Clock = std::chrono::steady_clock;

double MsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProxySession>> ProxySession::Create(
    const Device& device, const models::WorkloadSpec& spec, uint64_t seed) {
  models::torch_proxy::ProxyOptions options;
  options.device = device.torch_device();
  options.pin_memory = device.is_cuda();
  options.seed = seed;
  ASSIGN_OR_RETURN(models::torch_proxy::Proxy proxy, models::torch_proxy::MakeProxy(spec, options));
  return std::unique_ptr<ProxySession>(new ProxySession(device, spec, std::move(proxy)));
}

ProxySession::ProxySession(const Device& device, const models::WorkloadSpec& spec,
                           models::torch_proxy::Proxy proxy)
    : device_(device),
      spec_(spec),
      train_(spec.phase == models::Phase::kTrain),
      math_(spec.precision),
      proxy_(std::move(proxy)),
      timeline_(device) {
  proxy_.model->To(device.torch_device(), ModelDtype(spec.precision));
  proxy_.model->Train(train_);
  if (!train_) return;
  optimizer_ = models::torch_proxy::MakeStepOptimizer(spec.optimizer, proxy_.model->Parameters());
  if (spec.precision == models::Precision::kFp16Amp && device.is_cuda()) {
    auto options = torch::TensorOptions().device(device.torch_device());
    loss_scale_ = torch::full({}, 65536.0, options);
    inverse_scale_ = torch::full({}, 1.0 / 65536.0, options);
    found_inf_ = torch::zeros({1}, options);
  }
}

template <typename Mark>
void ProxySession::Run(const models::torch_proxy::HostBatch& batch, Mark&& mark) {
  const torch::Device dev = device_.torch_device();
  std::vector<torch::Tensor> inputs;
  inputs.reserve(batch.inputs.size());
  for (const torch::Tensor& t : batch.inputs) inputs.push_back(t.to(dev, /*non_blocking=*/true));
  torch::Tensor target = batch.target.to(dev, /*non_blocking=*/true);
  if (spec_.precision == models::Precision::kFp64 && target.is_floating_point()) {
    target = target.to(torch::kFloat64);
  }
  if (spec_.precision == models::Precision::kFp64) {
    for (torch::Tensor& t : inputs) {
      if (t.is_floating_point()) t = t.to(torch::kFloat64);
    }
  }
  mark();  // copied
  if (!train_) {
    torch::NoGradGuard no_grad;
    AutocastScope autocast(device_, spec_.precision);
    proxy_.model->Forward(inputs);
    mark();  // forward
    return;
  }
  torch::Tensor loss;
  {
    AutocastScope autocast(device_, spec_.precision);
    loss = proxy_.model->Loss(proxy_.model->Forward(inputs), target);
  }
  mark();  // forward + loss
  optimizer_->ZeroGrad();
  (loss_scale_ ? loss * *loss_scale_ : loss).backward();
  if (after_backward_) after_backward_();
  mark();  // backward
  if (loss_scale_) {
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : proxy_.model->Parameters()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
    found_inf_->zero_();
    at::_amp_foreach_non_finite_check_and_unscale_(grads, *found_inf_, *inverse_scale_);
  }
  optimizer_->Step();
  mark();  // optimizer step
}

double ProxySession::Prefetch(int batches) {
  ring_.clear();
  next_ = 0;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < std::max(1, batches); ++i) ring_.push_back(proxy_.data->Next());
  return MsBetween(start, Clock::now()) / static_cast<double>(ring_.size());
}

void ProxySession::SteadyStep() {
  const models::torch_proxy::HostBatch& batch = ring_[next_];
  next_ = (next_ + 1) % ring_.size();
  Run(batch, [] {});
}

double ProxySession::TimedBlockMs(int steps) {
  timeline_.Clear();
  const int start = timeline_.Mark();
  for (int i = 0; i < steps; ++i) SteadyStep();
  const int end = timeline_.Mark();
  timeline_.Wait(end);
  return timeline_.ElapsedMs(start, end) / std::max(1, steps);
}

StepTimes ProxySession::InstrumentedStep() {
  device_.Synchronize();
  timeline_.Clear();
  const Clock::time_point start = Clock::now();
  const models::torch_proxy::HostBatch batch = proxy_.data->Next();
  const Clock::time_point loaded = Clock::now();
  int last = timeline_.Mark();  // data loaded
  Run(batch, [&] { last = timeline_.Mark(); });
  timeline_.Wait(last);

  StepTimes t;
  t.total_ms = MsBetween(start, Clock::now());
  t.data_load_ms = MsBetween(start, loaded);
  // Marks: 0 data loaded, 1 copied, 2 forward (+ loss), 3 backward, 4 step.
  double* phases[] = {&t.h2d_ms, &t.forward_ms, &t.backward_ms, &t.optimizer_ms};
  for (int i = 1; i <= last; ++i) *phases[i - 1] = timeline_.ElapsedMs(i - 1, i);
  return t;
}

}  // namespace perfcast::profiler

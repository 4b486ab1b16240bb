#include "models/torch/optimizers.h"

#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include <torch/version.h>

namespace perfcast::models::torch_proxy {
namespace {

constexpr double kLearningRate = 1e-3;
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.999;
constexpr double kEpsilon = 1e-8;
constexpr double kAdamWWeightDecay = 1e-2;
constexpr double kSgdMomentum = 0.9;

bool AllOnCuda(const std::vector<torch::Tensor>& parameters) {
  for (const torch::Tensor& p : parameters) {
    if (!p.is_cuda()) return false;
  }
  return !parameters.empty();
}

// LibTorch's optimizer, one tensor at a time.
class PerTensorOptimizer : public StepOptimizer {
 public:
  explicit PerTensorOptimizer(std::unique_ptr<torch::optim::Optimizer> optimizer)
      : optimizer_(std::move(optimizer)) {}
  void ZeroGrad() override { optimizer_->zero_grad(); }
  void Step() override { optimizer_->step(); }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// Shared by the foreach optimizers: the parameters, and for each step the
// indices of those with a gradient grouped by (device, dtype), as
// Optimizer._group_tensors_by_device_and_dtype groups them (one foreach
// kernel cannot span devices or dtypes).
class ForeachBase : public StepOptimizer {
 public:
  explicit ForeachBase(std::vector<torch::Tensor> parameters)
      : parameters_(std::move(parameters)) {}

  void ZeroGrad() override {
    for (torch::Tensor& p : parameters_) p.mutable_grad().reset();
  }

 protected:
  using GroupKey = std::tuple<int, int, int>;  // device type, index, dtype

  std::map<GroupKey, std::vector<size_t>> GroupsWithGradients() const {
    std::map<GroupKey, std::vector<size_t>> groups;
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const torch::Tensor& p = parameters_[i];
      if (!p.grad().defined()) continue;
      groups[{static_cast<int>(p.device().type()), static_cast<int>(p.device().index()),
              static_cast<int>(p.scalar_type())}]
          .push_back(i);
    }
    return groups;
  }

  std::vector<torch::Tensor> parameters_;
};

// Training without an update ("none"): backward only, gradients dropped.
class NoUpdate : public ForeachBase {
 public:
  using ForeachBase::ForeachBase;
  void Step() override {}
};

// torch.optim.Adam / AdamW with foreach=True (PyTorch's CUDA default).
class ForeachAdam : public ForeachBase {
 public:
  ForeachAdam(std::vector<torch::Tensor> parameters, double decoupled_weight_decay)
      : ForeachBase(std::move(parameters)),
        decoupled_weight_decay_(decoupled_weight_decay),
        exp_avg_(parameters_.size()),
        exp_avg_sq_(parameters_.size()),
        steps_(parameters_.size(), 0) {}

  void Step() override {
    torch::NoGradGuard no_grad;
    for (const auto& [key, indices] : GroupsWithGradients()) {
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
      std::vector<at::Scalar> step_sizes, bias_correction2_sqrts;
      for (size_t i : indices) {
        const torch::Tensor& p = parameters_[i];
        if (!exp_avg_[i].defined()) {  // lazy state, as PyTorch's _init_group
          exp_avg_[i] = torch::zeros_like(p, torch::MemoryFormat::Preserve);
          exp_avg_sq_[i] = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        }
        const double step = static_cast<double>(++steps_[i]);
        step_sizes.emplace_back(-kLearningRate / (1 - std::pow(kBeta1, step)));
        bias_correction2_sqrts.emplace_back(std::sqrt(1 - std::pow(kBeta2, step)));
        params.push_back(p);
        grads.push_back(p.grad());
        exp_avgs.push_back(exp_avg_[i]);
        exp_avg_sqs.push_back(exp_avg_sq_[i]);
      }
      if (decoupled_weight_decay_ != 0) {
        at::_foreach_mul_(params, 1 - kLearningRate * decoupled_weight_decay_);
      }
#if TORCH_VERSION_MAJOR >= 2
      at::_foreach_lerp_(exp_avgs, grads, 1 - kBeta1);
#else
      // LibTorch 1.x has no foreach lerp (the CPU-only builds): the same
      // first moment in two kernels, as PyTorch 1.13's Adam wrote it.
      at::_foreach_mul_(exp_avgs, kBeta1);
      at::_foreach_add_(exp_avgs, grads, 1 - kBeta1);
#endif
      at::_foreach_mul_(exp_avg_sqs, kBeta2);
      at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - kBeta2);
      // The denominator is a new tensor per parameter: for the length of the
      // step the optimizer holds one more copy of the parameters
      // (predictor/memory.h prices it).
      std::vector<torch::Tensor> denominators = at::_foreach_sqrt(exp_avg_sqs);
      at::_foreach_div_(denominators, bias_correction2_sqrts);
      at::_foreach_add_(denominators, kEpsilon);
      at::_foreach_addcdiv_(params, exp_avgs, denominators, step_sizes);
    }
  }

 private:
  const double decoupled_weight_decay_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  std::vector<int64_t> steps_;
};

// torch.optim.SGD(momentum=0.9) with foreach=True.
class ForeachSgd : public ForeachBase {
 public:
  explicit ForeachSgd(std::vector<torch::Tensor> parameters)
      : ForeachBase(std::move(parameters)), momentum_buffers_(parameters_.size()) {}

  void Step() override {
    torch::NoGradGuard no_grad;
    for (const auto& [key, indices] : GroupsWithGradients()) {
      std::vector<torch::Tensor> params, grads, buffers;
      bool all_have_buffers = true;
      for (size_t i : indices) {
        params.push_back(parameters_[i]);
        grads.push_back(parameters_[i].grad());
        all_have_buffers = all_have_buffers && momentum_buffers_[i].defined();
      }
      if (all_have_buffers) {
        for (size_t i : indices) buffers.push_back(momentum_buffers_[i]);
        at::_foreach_mul_(buffers, kSgdMomentum);
        at::_foreach_add_(buffers, grads, 1.0);  // 1 - dampening
      } else {
        // The first step: the buffer starts as a copy of the gradient.
        for (size_t i : indices) {
          torch::Tensor& buffer = momentum_buffers_[i];
          if (!buffer.defined()) {
            buffer = parameters_[i].grad().clone().detach();
          } else {
            buffer.mul_(kSgdMomentum).add_(parameters_[i].grad());
          }
          buffers.push_back(buffer);
        }
      }
      at::_foreach_add_(params, buffers, -kLearningRate);
    }
  }

 private:
  std::vector<torch::Tensor> momentum_buffers_;
};

}  // namespace

std::unique_ptr<StepOptimizer> MakeStepOptimizer(const std::string& name,
                                                 std::vector<torch::Tensor> parameters,
                                                 OptimizerImpl impl) {
  if (name == "none") return std::make_unique<NoUpdate>(std::move(parameters));
  const bool foreach = impl == OptimizerImpl::kForeach ||
                       (impl == OptimizerImpl::kAsPyTorch && AllOnCuda(parameters));
  if (foreach) {
    if (name == "sgd") return std::make_unique<ForeachSgd>(std::move(parameters));
    return std::make_unique<ForeachAdam>(std::move(parameters),
                                         name == "adamw" ? kAdamWWeightDecay : 0.0);
  }
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (name == "sgd") {
    optimizer = std::make_unique<torch::optim::SGD>(
        std::move(parameters), torch::optim::SGDOptions(kLearningRate).momentum(kSgdMomentum));
  } else if (name == "adamw") {
    optimizer = std::make_unique<torch::optim::AdamW>(
        std::move(parameters),
        torch::optim::AdamWOptions(kLearningRate).weight_decay(kAdamWWeightDecay));
  } else {
    optimizer = std::make_unique<torch::optim::Adam>(std::move(parameters),
                                                     torch::optim::AdamOptions(kLearningRate));
  }
  return std::make_unique<PerTensorOptimizer>(std::move(optimizer));
}

}  // namespace perfcast::models::torch_proxy

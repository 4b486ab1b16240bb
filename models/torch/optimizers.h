// The optimizers a proxy trains with, as a PyTorch user's loop runs them.
//
// PyTorch's torch.optim.Adam, AdamW and SGD default to their multi-tensor
// ("foreach") implementations when every parameter is on a CUDA device: each
// update is a handful of _foreach_* kernels over all parameters at once
// (multi_tensor_apply packs up to 30-110 tensors and 320 chunks of 65,536
// elements into one launch). LibTorch's C++ optimizers have no such path:
// they update one tensor at a time, 3-9 kernels per tensor, which made the
// agent's fp32 training steps 3-9% slower than the same model in a plain
// PyTorch loop on an H100 (data/README.md, method 4). So on CUDA the agent
// runs ForeachAdam / ForeachSgd below, written after torch/optim/adam.py's
// _multi_tensor_adam and sgd.py's _multi_tensor_sgd (capturable=False,
// amsgrad=False, maximize=False, nesterov=False, dampening 0); on a CPU,
// where PyTorch also updates tensor by tensor, it keeps LibTorch's own.
//
// Internal to perfcast_proxies and the agent (includes LibTorch). Not
// thread-safe.
#ifndef PERFCAST_MODELS_TORCH_OPTIMIZERS_H_
#define PERFCAST_MODELS_TORCH_OPTIMIZERS_H_

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace perfcast::models::torch_proxy {

// What a training step needs of an optimizer.
class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  // Drops the gradients (set to none, PyTorch's and LibTorch's default):
  // no kernel, and the next backward allocates them afresh.
  virtual void ZeroGrad() = 0;
  // One update of every parameter that has a gradient.
  virtual void Step() = 0;
};

// Which implementation MakeStepOptimizer builds.
enum class OptimizerImpl {
  kAsPyTorch,   // foreach when every parameter is on CUDA, else per tensor
  kForeach,     // always the multi-tensor path (tests run it on a CPU)
  kPerTensor,   // always LibTorch's own optimizer
};

// The agent's hyper-parameters: lr 1e-3; Adam betas (0.9, 0.999), eps 1e-8,
// no weight decay; AdamW weight decay 1e-2 (both frameworks' default); SGD
// momentum 0.9. `name` is "adam", "adamw", "sgd" or "none" (backward only:
// Step() updates nothing, the workload descriptor has no optimizer
// operation); anything else is adam (workload validation has refused
// unknown names before).
std::unique_ptr<StepOptimizer> MakeStepOptimizer(const std::string& name,
                                                 std::vector<torch::Tensor> parameters,
                                                 OptimizerImpl impl = OptimizerImpl::kAsPyTorch);

}  // namespace perfcast::models::torch_proxy

#endif  // PERFCAST_MODELS_TORCH_OPTIMIZERS_H_

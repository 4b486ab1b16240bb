#include "models/torch/optimizers.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::models::torch_proxy {
namespace {

// Parameters of several shapes and two dtypes (two foreach groups), each
// with its own generator state so that both optimizers see equal tensors.
std::vector<torch::Tensor> MakeParameters() {
  torch::manual_seed(7);
  std::vector<torch::Tensor> params = {
      torch::randn({4, 3}), torch::randn({5}), torch::randn({2, 2, 3}),
      torch::randn({6}, torch::TensorOptions().dtype(torch::kFloat64))};
  for (torch::Tensor& p : params) p.set_requires_grad(true);
  return params;
}

std::vector<torch::Tensor> Clone(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : params) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

// The same gradients for both sets at each step: a function of the step and
// of the parameter's current value (so that a wrong update shows at the next
// step too).
void SetGradients(std::vector<torch::Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() =
        (params[i].detach() * 0.5 + 0.1 * static_cast<double>(step + 1) - 0.03 * i).sin();
  }
}

// Runs `steps` updates of `name` with both implementations and compares.
void ExpectForeachMatchesPerTensor(const std::string& name, int steps) {
  std::vector<torch::Tensor> foreach_params = MakeParameters();
  std::vector<torch::Tensor> per_tensor_params = Clone(foreach_params);
  std::unique_ptr<StepOptimizer> foreach =
      MakeStepOptimizer(name, foreach_params, OptimizerImpl::kForeach);
  std::unique_ptr<StepOptimizer> per_tensor =
      MakeStepOptimizer(name, per_tensor_params, OptimizerImpl::kPerTensor);
  std::vector<torch::Tensor> start = Clone(foreach_params);
  for (int step = 0; step < steps; ++step) {
    foreach->ZeroGrad();
    per_tensor->ZeroGrad();
    SetGradients(foreach_params, step);
    SetGradients(per_tensor_params, step);
    foreach->Step();
    per_tensor->Step();
  }
  for (size_t i = 0; i < foreach_params.size(); ++i) {
    SCOPED_TRACE(name + " parameter " + std::to_string(i));
    EXPECT_TRUE(torch::allclose(foreach_params[i], per_tensor_params[i], 1e-5, 1e-7))
        << foreach_params[i] << "\n" << per_tensor_params[i];
    // And the parameters moved: the comparison is not of two no-ops.
    EXPECT_GT((foreach_params[i] - start[i]).abs().max().item<double>(), 1e-4);
  }
}

TEST(StepOptimizerTest, ForeachAdamMatchesLibTorchsAdam) { ExpectForeachMatchesPerTensor("adam", 4); }

TEST(StepOptimizerTest, ForeachAdamWMatchesLibTorchsAdamW) {
  ExpectForeachMatchesPerTensor("adamw", 4);
}

TEST(StepOptimizerTest, ForeachSgdMatchesLibTorchsSgdWithMomentum) {
  ExpectForeachMatchesPerTensor("sgd", 4);
}

TEST(StepOptimizerTest, ParametersWithoutGradientsAreLeftAlone) {
  for (OptimizerImpl impl : {OptimizerImpl::kForeach, OptimizerImpl::kPerTensor}) {
    std::vector<torch::Tensor> params = MakeParameters();
    std::vector<torch::Tensor> start = Clone(params);
    std::unique_ptr<StepOptimizer> adam = MakeStepOptimizer("adam", params, impl);
    SetGradients(params, 0);
    params[1].mutable_grad().reset();
    adam->Step();
    EXPECT_TRUE(torch::equal(params[1], start[1]));
    EXPECT_FALSE(torch::equal(params[0], start[0]));
  }
}

TEST(StepOptimizerTest, ZeroGradDropsTheGradients) {
  std::vector<torch::Tensor> params = MakeParameters();
  std::unique_ptr<StepOptimizer> adam = MakeStepOptimizer("adam", params, OptimizerImpl::kForeach);
  SetGradients(params, 0);
  adam->ZeroGrad();
  for (const torch::Tensor& p : params) EXPECT_FALSE(p.grad().defined());
}

TEST(StepOptimizerTest, NoneUpdatesNothing) {
  std::vector<torch::Tensor> params = MakeParameters();
  std::vector<torch::Tensor> start = Clone(params);
  std::unique_ptr<StepOptimizer> none = MakeStepOptimizer("none", params);
  SetGradients(params, 0);
  none->Step();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], start[i]));
  none->ZeroGrad();
  EXPECT_FALSE(params[0].grad().defined());
}

}  // namespace
}  // namespace perfcast::models::torch_proxy

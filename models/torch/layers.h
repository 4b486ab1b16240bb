// Layer functions shared by the proxy networks (nets.cc) and the agent's
// operation micro-benchmarks (profiler/op_bench.cc), so that a benchmarked
// operation runs exactly the kernels it stands for in a proxy. Each mirrors
// an IterationBuilder method (models/iteration_builder.h). Header-only: the
// LibTorch translation units that include it are few and slow to compile.
#ifndef PERFCAST_MODELS_TORCH_LAYERS_H_
#define PERFCAST_MODELS_TORCH_LAYERS_H_

#include <cmath>
#include <limits>

#include <torch/torch.h>
#include <torch/version.h>

namespace perfcast::models::torch_proxy {

// Scaled dot-product attention of q, k, v [batch, heads, seq, head_dim]
// (IterationBuilder::FusedAttention): the fused kernels (flash /
// memory-efficient) that PyTorch 2 runs by default. LibTorch 1.x has none:
// there the product is written out, which only CPU tests run.
inline torch::Tensor ScaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                               const torch::Tensor& v, bool causal) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
#else
  torch::Tensor scores =
      torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) {
    const int64_t seq = q.size(-2);
    torch::Tensor above = torch::ones({seq, seq}, q.options().dtype(torch::kBool)).triu(1);
    scores = scores.masked_fill(above, -std::numeric_limits<float>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

// torch::nn::Linear as Python's nn.Linear runs it: ATen's linear, which
// autocast casts whole (bias included) and which, for a contiguous input of
// any rank, folds the leading dimensions and adds the bias in the GEMM's
// epilogue. LibTorch's C++ LinearImpl::forward runs matmul and then
// `output += bias` for inputs of rank > 2: under bf16 autocast that is a
// GEMM without the bias plus a mixed bf16 += fp32 add over the whole output,
// which made every Linear of BERT, ViT and GPT-2 slower than in a user's
// PyTorch loop (an H100 profile: 8 ms of a 25 ms BERT-large inference step).
class FusedLinearImpl : public torch::nn::LinearImpl {
 public:
  using torch::nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& input) {
    return torch::linear(input, weight, bias);
  }
};
TORCH_MODULE(FusedLinear);

// RMSNorm over the last dimension as Hugging Face's Llama writes it
// (IterationBuilder::RmsNorm): fp32 statistics, result in x's dtype.
inline torch::Tensor RmsNormForward(const torch::Tensor& x, const torch::Tensor& weight) {
  torch::Tensor wide = x.to(torch::kFloat32);
  torch::Tensor variance = wide.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (wide * torch::rsqrt(variance + 1e-5)).to(x.scalar_type());
}

// SwiGLU of a fused gate-and-up projection [..., 2 x width]:
// SiLU(gate) * up, [..., width].
inline torch::Tensor SwiGlu(const torch::Tensor& gate_up) {
  std::vector<torch::Tensor> halves = gate_up.chunk(2, -1);
  return torch::silu(halves[0]) * halves[1];
}

}  // namespace perfcast::models::torch_proxy

#endif  // PERFCAST_MODELS_TORCH_LAYERS_H_

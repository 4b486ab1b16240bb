#include "profiler/op_bench.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "models/torch/layers.h"
#include "models/torch/optimizers.h"
#include "profiler/fingerprint.h"
#include "profiler/stats.h"

namespace perfcast::profiler {
namespace {

using models::Phase;
using models::Precision;

int64_t Param(const models::WorkloadSpec& spec, const char* name) {
  return spec.params.at(name);
}

// Normalisation and softmax compute in FP32 under autocast (and TF32 only
// changes matmuls); embedding tables are never autocast.
torch::Dtype NormDtype(Precision precision) {
  return precision == Precision::kFp64 ? torch::kFloat64 : torch::kFloat32;
}

// One benchmark call and the tensors it needs. Train calls compute the
// gradients with autograd::grad, which returns them instead of accumulating
// into .grad, so every call does the same work.
struct OpCall {
  std::function<void()> call;
};

// Builds forward-only or forward+backward calls around a forward function.
OpCall WithPhase(Phase phase, std::vector<torch::Tensor> inputs,
                 std::function<torch::Tensor()> forward) {
  if (phase == Phase::kInference) {
    return {[forward] {
      torch::NoGradGuard no_grad;
      forward();
    }};
  }
  torch::Tensor grad_out = torch::randn_like(forward().detach());
  return {[forward, inputs, grad_out] {
    torch::Tensor out = forward();
    torch::autograd::grad({out}, inputs, {grad_out});
  }};
}

absl::StatusOr<OpCall> BuildCall(const Device& device, const models::WorkloadSpec& spec) {
  const torch::Device dev = device.torch_device();
  const Precision precision = spec.precision;
  const bool train = spec.phase == Phase::kTrain;
  auto opts = [&](torch::Dtype dtype) {
    return torch::TensorOptions().dtype(dtype).device(dev).requires_grad(train);
  };
  const auto op_dtype = OperationDtype(precision);
  const std::string& family = spec.family;

  if (family == "gemm") {
    const int64_t b = Param(spec, "batch"), m = Param(spec, "m"), n = Param(spec, "n"),
                  k = Param(spec, "k");
    if (b == 1) {
      torch::Tensor a = torch::randn({m, k}, opts(op_dtype));
      torch::Tensor w = torch::randn({k, n}, opts(op_dtype));
      return WithPhase(spec.phase, {a, w}, [a, w] { return torch::mm(a, w); });
    }
    torch::Tensor a = torch::randn({b, m, k}, opts(op_dtype));
    torch::Tensor w = torch::randn({b, k, n}, opts(op_dtype));
    return WithPhase(spec.phase, {a, w}, [a, w] { return torch::bmm(a, w); });
  }
  if (family == "conv2d") {
    const int64_t kernel = Param(spec, "kernel"), stride = Param(spec, "stride");
    torch::Tensor x = torch::randn(
        {spec.batch_size, Param(spec, "channels_in"), Param(spec, "height"), Param(spec, "width")},
        opts(op_dtype));
    torch::Tensor w = torch::randn(
        {Param(spec, "channels_out"), Param(spec, "channels_in"), kernel, kernel}, opts(op_dtype));
    return WithPhase(spec.phase, {x, w}, [x, w, stride, kernel] {
      return torch::conv2d(x, w, {}, stride, kernel / 2);
    });
  }
  if (family == "lstm_cell") {
    const int64_t layers = Param(spec, "layers"), hidden = Param(spec, "hidden"),
                  input = Param(spec, "input");
    torch::Tensor x = torch::randn({spec.batch_size, Param(spec, "seq_len"), input}, opts(op_dtype));
    std::vector<torch::Tensor> weights;
    for (int64_t l = 0; l < layers; ++l) {
      const int64_t in = l == 0 ? input : hidden;
      weights.push_back(torch::randn({4 * hidden, in}, opts(op_dtype)) * 0.05);
      weights.push_back(torch::randn({4 * hidden, hidden}, opts(op_dtype)) * 0.05);
      weights.push_back(torch::zeros({4 * hidden}, opts(op_dtype)));
      weights.push_back(torch::zeros({4 * hidden}, opts(op_dtype)));
    }
    // The scaled weights above are not leaves; detach them into leaves.
    for (torch::Tensor& w : weights) w = w.detach().requires_grad_(train);
    torch::Tensor h0 = torch::zeros({layers, spec.batch_size, hidden},
                                    torch::TensorOptions().dtype(op_dtype).device(dev));
    torch::Tensor c0 = torch::zeros_like(h0);
    std::vector<torch::Tensor> inputs = weights;
    inputs.push_back(x);
    return WithPhase(spec.phase, inputs, [x, h0, c0, weights, layers] {
      return std::get<0>(torch::lstm(x, {h0, c0}, weights, /*has_biases=*/true, layers,
                                     /*dropout=*/0.0, /*train=*/true, /*bidirectional=*/false,
                                     /*batch_first=*/true));
    });
  }
  if (family == "attention") {
    const int64_t heads = Param(spec, "heads"), seq = Param(spec, "seq_len"),
                  head_dim = Param(spec, "head_dim");
    torch::Tensor q = torch::randn({spec.batch_size, heads, seq, head_dim}, opts(op_dtype));
    torch::Tensor k = torch::randn({spec.batch_size, heads, seq, head_dim}, opts(op_dtype));
    torch::Tensor v = torch::randn({spec.batch_size, heads, seq, head_dim}, opts(op_dtype));
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    return WithPhase(spec.phase, {q, k, v}, [q, k, v, scale] {
      torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
      return torch::matmul(torch::softmax(scores, -1), v);
    });
  }
  if (family == "sdpa") {
    const std::vector<int64_t> shape = {spec.batch_size, Param(spec, "heads"),
                                        Param(spec, "seq_len"), Param(spec, "head_dim")};
    torch::Tensor q = torch::randn(shape, opts(op_dtype));
    torch::Tensor k = torch::randn(shape, opts(op_dtype));
    torch::Tensor v = torch::randn(shape, opts(op_dtype));
    const bool causal = Param(spec, "causal") == 1;
    return WithPhase(spec.phase, {q, k, v}, [q, k, v, causal] {
      return models::torch_proxy::ScaledDotProductAttention(q, k, v, causal);
    });
  }
  if (family == "rmsnorm") {
    // The decoders' residual stream stays fp32 under autocast.
    torch::Tensor x =
        torch::randn({Param(spec, "rows"), Param(spec, "cols")}, opts(NormDtype(precision)));
    torch::Tensor weight = torch::ones({Param(spec, "cols")}, opts(NormDtype(precision)));
    return WithPhase(spec.phase, {x, weight}, [x, weight] {
      return models::torch_proxy::RmsNormForward(x, weight);
    });
  }
  if (family == "swiglu") {
    torch::Tensor x =
        torch::randn({Param(spec, "rows"), 2 * Param(spec, "cols")}, opts(op_dtype));
    return WithPhase(spec.phase, {x}, [x] { return models::torch_proxy::SwiGlu(x); });
  }
  if (family == "cross_entropy") {
    const int64_t vocab = Param(spec, "vocab");
    torch::Tensor logits = torch::randn({Param(spec, "rows"), vocab}, opts(NormDtype(precision)));
    torch::Tensor target = torch::randint(
        vocab, {Param(spec, "rows")}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
    return WithPhase(spec.phase, {logits}, [logits, target] {
      return torch::nn::functional::cross_entropy(logits, target);
    });
  }
  if (family == "elementwise") {
    torch::Tensor x = torch::randn({Param(spec, "numel")}, opts(op_dtype));
    return WithPhase(spec.phase, {x}, [x] { return torch::relu(x); });
  }
  if (family == "layernorm" || family == "softmax") {
    const int64_t cols = Param(spec, "cols");
    torch::Tensor x = torch::randn({Param(spec, "rows"), cols}, opts(NormDtype(precision)));
    if (family == "softmax") {
      return WithPhase(spec.phase, {x}, [x] { return torch::softmax(x, -1); });
    }
    torch::Tensor gamma = torch::ones({cols}, opts(NormDtype(precision)));
    torch::Tensor beta = torch::zeros({cols}, opts(NormDtype(precision)));
    return WithPhase(spec.phase, {x, gamma, beta}, [x, gamma, beta, cols] {
      return torch::layer_norm(x, {cols}, gamma, beta);
    });
  }
  if (family == "embedding") {
    torch::Tensor table =
        torch::randn({Param(spec, "rows"), Param(spec, "dim")}, opts(NormDtype(precision)));
    torch::Tensor ids = torch::randint(
        Param(spec, "rows"), {spec.batch_size * Param(spec, "lookups")},
        torch::TensorOptions().dtype(torch::kInt64).device(dev));
    return WithPhase(spec.phase, {table}, [table, ids] { return torch::embedding(table, ids); });
  }
  if (family == "optimizer") {
    torch::Tensor param = torch::randn({Param(spec, "params")},
                                       torch::TensorOptions().device(dev).requires_grad(true));
    param.mutable_grad() = torch::randn_like(param) * 1e-3;
    std::shared_ptr<models::torch_proxy::StepOptimizer> optimizer =
        models::torch_proxy::MakeStepOptimizer(spec.optimizer, {param});
    return OpCall{[optimizer, param] { optimizer->Step(); }};
  }
  if (family == "h2d") {
    const bool pinned = Param(spec, "pinned") != 0;
    torch::Tensor host = torch::ones({Param(spec, "bytes")}, torch::TensorOptions().dtype(torch::kUInt8));
    if (pinned && device.is_cuda()) host = host.pin_memory();
    torch::Tensor dst = torch::empty_like(host, torch::TensorOptions().device(dev));
    if (!device.is_cuda()) {
      // No device to copy to: the host-side staging copy is the transfer.
      dst = torch::empty_like(host);
    }
    return OpCall{[host, dst, pinned] { dst.copy_(host, /*non_blocking=*/pinned); }};
  }
  return absl::InvalidArgumentError(absl::StrCat("no micro-benchmark for family '", family, "'"));
}

// Families whose math the descriptors price under autocast.
bool RunsUnderAutocast(const std::string& family) {
  return family == "attention" || family == "sdpa" || family == "elementwise" ||
         family == "layernorm" || family == "softmax" || family == "swiglu";
}

}  // namespace

std::optional<double> PeakTflops(const models::MeasuredRates& rates, Precision precision) {
  switch (precision) {
    case Precision::kFp32:
    case Precision::kStrictFp32:
      return rates.fp32_tflops;
    case Precision::kTf32:
      return rates.tf32_tflops;
    case Precision::kFp16Amp:
      return rates.fp16_tflops;
    case Precision::kBf16Amp:
      return rates.bf16_tflops;
    case Precision::kFp64:
      return rates.fp64_tflops;
    case Precision::kFp8:
    case Precision::kInt8:
      return std::nullopt;
  }
  return std::nullopt;
}

absl::StatusOr<Measurement> MeasureOperation(const Device& device,
                                             const models::WorkloadSpec& spec,
                                             const TimingPolicy& timing, int pass,
                                             const models::MeasuredRates& rates,
                                             const GpuSensor* sensor) {
  if (spec.kind != models::WorkloadKind::kOperation) {
    return absl::InvalidArgumentError(absl::StrCat(spec.Key(), " is not an operation"));
  }
  RETURN_IF_ERROR(device.Supports(spec.precision));
  ASSIGN_OR_RETURN(models::WorkloadDescriptor descriptor, models::Describe(spec));

  Measurement m;
  models::Profile& profile = m.profile;
  profile.workload = spec;
  RETURN_IF_ERROR(RunGuarded(device, [&]() -> absl::Status {
    MathModeScope math(spec.precision);
    AutocastScope autocast(device, RunsUnderAutocast(spec.family) ? spec.precision
                                                                   : Precision::kFp32);
    device.ResetPeakMemory();
    ASSIGN_OR_RETURN(OpCall op, BuildCall(device, spec));
    // Warm-up (allocator, library handles, lazy init), then one timed call
    // to size the blocks.
    for (int i = 0; i < std::max(1, timing.warmup_iterations); ++i) op.call();
    const double first_ms = std::max(1e-4, TimePerCallMs(device, 1, op.call));
    const int calls = static_cast<int>(
        std::clamp(std::ceil(timing.op_target_block_ms / first_ms), 1.0,
                   static_cast<double>(timing.op_max_calls)));

    const int blocks = RepeatsInPass(timing.op_repeats, timing.passes, pass);
    // One host probe per pass: an operation's blocks (~2 ms) are as short as
    // the probe.
    m.dispatch_ops_per_s.push_back(DispatchOpsPerS(device, kHostProbeOps, /*rounds=*/1));
    BlockMonitor monitor(sensor);
    for (int r = 0; r < blocks; ++r) {
      monitor.BeginBlock();
      m.block_ms.push_back(TimePerCallMs(device, calls, op.call));
      monitor.EndBlock();
    }
    m.steps = static_cast<int64_t>(calls) * blocks;
    m.gpu = monitor.State();
    profile.iteration = Summarize(m.block_ms);
    profile.iteration.count = m.steps;
    profile.repeats = blocks;
    profile.repeat_cv = CoefficientOfVariation(m.block_ms);
    profile.peak_memory_bytes = device.PeakMemoryBytes();
    return absl::OkStatus();
  }));

  const double call_s = profile.iteration.median_ms * 1e-3;
  profile.throughput_per_s = 1.0 / call_s;
  if (spec.family == "h2d") profile.phases.h2d_ms = profile.iteration.median_ms;
  const double flops = descriptor.total_flops();
  if (flops > 0) {
    profile.achieved_tflops = flops / call_s / 1e12;
    if (std::optional<double> peak = PeakTflops(rates, spec.precision); peak && *peak > 0) {
      profile.roofline_fraction = *profile.achieved_tflops / *peak;
    }
  }
  return m;
}

}  // namespace perfcast::profiler

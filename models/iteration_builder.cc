#include "models/iteration_builder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace perfcast::models {
namespace {

// FLOPs per element of normalisation and softmax kernels (mean, variance,
// normalise, affine; max, subtract, exp, sum, divide), and their backward.
constexpr double kNormFlops = 7;
constexpr double kNormBackwardFlops = 12;
constexpr double kSoftmaxFlops = 5;
constexpr double kSoftmaxBackwardFlops = 4;

// The optimizer step as PyTorch runs it on a GPU (and the agent since method
// 4, models/torch/optimizers.h): multi-tensor ("foreach") kernels over all
// parameters. Adam: exp_avg lerp_ (2 FLOPs, 12 bytes of fp32 traffic per
// parameter), exp_avg_sq mul_ (1, 8) and addcmul_ (2, 16), a new sqrt (1, 8),
// div_ and add_(eps) on it (1, 8 each), addcdiv_ into the parameter (2, 16):
// 7 foreach ops, 10 FLOPs, 76 bytes. AdamW first decays the parameter in
// place: one more op, FLOP and 8 bytes. SGD with momentum 0.9: buffer mul_
// (1, 8) and add_(grad) (1, 12), parameter add_(buffer, -lr) (2, 12): 3 ops, 4
// FLOPs, 32 bytes. Gradients are reset by setting them to none: no kernel.
// (On a CPU the update runs tensor by tensor, as in PyTorch; its cost per
// launch is the CPU's own and is fitted as such.)
constexpr double kAdamFlopsPerParam = 10;
constexpr double kAdamBytesPerParam = 76;
constexpr double kAdamWFlopsPerParam = kAdamFlopsPerParam + 1;
constexpr double kAdamWBytesPerParam = kAdamBytesPerParam + 8;
constexpr double kSgdFlopsPerParam = 4;
constexpr double kSgdBytesPerParam = 32;

// One foreach op's kernel launches: ATen's multi_tensor_apply starts a kernel
// whenever it has packed its maximum of tensors (by the number of tensor
// lists the op reads and writes, `depth`: 110, 64, 48, 36 for 1-4 lists; 96
// for one list with a list of scalars) or of blocks (320 chunks of 65,536
// elements), so whichever fills first sets the count.
double ForeachLaunches(int64_t tensors, double params, int max_tensors) {
  constexpr double kElementsPerLaunch = 320.0 * 65536.0;
  return std::max({1.0, std::ceil(static_cast<double>(tensors) / max_tensors),
                   std::ceil(params / kElementsPerLaunch)});
}

// The optimizer step's launches for `tensors` parameter tensors holding
// `params` parameters, op by op as listed above.
double OptimizerLaunches(const std::string& optimizer, int64_t tensors, double params) {
  auto launches = [&](int max_tensors) { return ForeachLaunches(tensors, params, max_tensors); };
  if (optimizer == "sgd") return launches(110) + launches(64) + launches(64);
  double adam = launches(64) + launches(110) + launches(48) + launches(64) + launches(96) +
                launches(110) + launches(48);
  if (optimizer == "adamw") adam += launches(110);
  return adam;
}

// The optimizer step's Python-level calls for `tensors` parameter tensors
// (torch.optim's foreach path, the default on a GPU): per tensor, zero_grad's
// reset and the group's collection in _init_group, and for Adam the two bias
// corrections computed in Python from each tensor's step counter read on the
// host; then one call per foreach op above (Adam's step counters take one
// more).
double OptimizerPythonCalls(const std::string& optimizer, int64_t tensors) {
  const double n = static_cast<double>(tensors);
  if (optimizer == "sgd") return 2 * n + 3;
  return 4 * n + (optimizer == "adamw" ? 9 : 8);
}

// A training step's own Python work outside its layers, the optimizer's
// per-tensor work and its foreach calls: loss.backward()'s entry and seed
// gradient, and zero_grad()'s and step()'s wrappers, hooks, checks and tensor
// grouping, in calls' worth. Not counted call by call: the figure is the one
// that predicts held-out hosts best when the hosts are left out in turn
// (data/README.md, "Python calls").
constexpr double kTrainingStepPythonCalls = 50;

// A cuDNN LSTM layer runs one GEMM for the input projections of all steps,
// then per step a recurrent GEMM and a fused gate kernel; its backward runs
// the steps in reverse (GEMM + gate kernel each), then the input-gradient GEMM
// and the two weight-gradient GEMMs.
double LstmForwardLaunches(int64_t seq_len) { return 1 + 2.0 * seq_len; }
double LstmBackwardLaunches(int64_t seq_len) { return 2.0 * seq_len + 3; }

// Unfused attention as LibTorch dispatches it: layout copies of q and k,
// QK^T bmm, scale, softmax, copy of v, AV bmm, output layout copy; backward:
// four bmms, softmax and scale backward, and layout copies of dq, dk, dv, dout.
// Written out in Python, each forward kernel is its own call.
constexpr double kAttentionForwardLaunches = 8;
constexpr double kAttentionBackwardLaunches = 10;

// Flash / memory-efficient attention: one forward kernel; the backward runs
// a dot(dO, O) pre-pass, the main kernel and a dQ conversion.
constexpr double kFusedAttentionBackwardLaunches = 3;
// Query rows per block of a fused attention kernel.
constexpr double kAttentionBlock = 128;

// RMSNorm as five element-wise kernels and one row reduction forward
// (pow, mean, add eps, rsqrt, mul, mul by the weight); autograd runs about
// twice as many backward, plus the weight-gradient reduction.
constexpr double kRmsNormForwardLaunches = 6;
// Each of those forward kernels is its own call in Python.
constexpr double kRmsNormForwardCalls = kRmsNormForwardLaunches;
constexpr double kRmsNormBackwardLaunches = 10;

// One Python call per forward op; backward's ops run from the autograd
// engine, in C++.
double DefaultPythonCalls(IterationBuilder::Stage stage) {
  return stage == IterationBuilder::Stage::kForward ? 1 : 0;
}

}  // namespace

double ElementBytes(Precision precision) {
  switch (precision) {
    case Precision::kFp16Amp:
    case Precision::kBf16Amp:
    // Activations between the 8-bit matrix operations stay in 16 bits.
    case Precision::kFp8:
    case Precision::kInt8:
      return 2;
    case Precision::kFp64:
      return 8;
    case Precision::kFp32:
    case Precision::kTf32:
    case Precision::kStrictFp32:
      return 4;
  }
  return 4;
}

double GemmTiles(double m, double n, double batch) {
  return std::ceil(m / 128) * std::ceil(n / 128) * batch;
}

double ElementBlocks(double numel) { return std::max(1.0, std::ceil(numel / 1024)); }

IterationBuilder::IterationBuilder(const WorkloadSpec& spec) : spec_(spec) { out_.spec = spec; }

Precision IterationBuilder::matmul_precision() const { return spec_.precision; }

Precision IterationBuilder::conv_precision() const {
  // PyTorch's default lets cuDNN run FP32 convolutions in TF32; a GPU without
  // TF32 prices them at its FP32 rate (EffectiveRates falls back).
  return spec_.precision == Precision::kFp32 ? Precision::kTf32 : spec_.precision;
}

Precision IterationBuilder::norm_precision() const {
  switch (spec_.precision) {
    case Precision::kFp16Amp:
    case Precision::kBf16Amp:
    case Precision::kFp8:
    case Precision::kInt8:
    case Precision::kTf32:
      return Precision::kFp32;
    default:
      return spec_.precision;
  }
}

void IterationBuilder::Add(Operation op, Stage stage) {
  const double flops = op.flops * op.count;
  const double bytes = op.bytes * op.count;
  switch (stage) {
    case Stage::kForward:
      out_.forward_flops += flops;
      out_.forward_bytes += bytes;
      break;
    case Stage::kBackward:
      out_.backward_flops += flops;
      out_.backward_bytes += bytes;
      break;
    case Stage::kOptimizer:
      out_.optimizer_flops += flops;
      out_.optimizer_bytes += bytes;
      break;
    case Stage::kOther:
      break;
  }
  out_.kernel_launches += op.launches * op.count;
  out_.python_calls += op.python_calls * op.count;
  out_.operations.push_back(std::move(op));
}

void IterationBuilder::AddParameters(double count, int64_t tensors) {
  parameters_ += count;
  parameter_tensors_ += tensors;
}

void IterationBuilder::Gemm(const std::string& name, double m, double n, double k, double batch,
                            Stage stage) {
  Operation op;
  op.op_class = OpClass::kGemm;
  op.name = name;
  op.shape = {{"m", static_cast<int64_t>(m)},
              {"n", static_cast<int64_t>(n)},
              {"k", static_cast<int64_t>(k)},
              {"batch", static_cast<int64_t>(batch)}};
  op.precision = matmul_precision();
  op.flops = 2 * m * n * k * batch;
  op.bytes = act_bytes() * (m * k + k * n + m * n) * batch;
  op.work_items = GemmTiles(m, n, batch);
  op.python_calls = DefaultPythonCalls(stage);
  Add(std::move(op), stage);
}

void IterationBuilder::ElementOp(const std::string& name, OpClass op_class, Precision precision,
                                 double numel, double bytes, double flops, double launches,
                                 Stage stage, std::optional<double> python_calls) {
  Operation op;
  op.op_class = op_class;
  op.name = name;
  op.shape = {{"numel", static_cast<int64_t>(numel)}};
  op.precision = precision;
  op.flops = flops;
  op.bytes = bytes;
  op.launches = launches;
  op.work_items = ElementBlocks(numel);
  op.python_calls = python_calls.value_or(DefaultPythonCalls(stage));
  Add(std::move(op), stage);
}

void IterationBuilder::CastWeights(const std::string& name, double numel, int64_t tensors) {
  const bool amp =
      spec_.precision == Precision::kFp16Amp || spec_.precision == Precision::kBf16Amp;
  if (!amp || !autocast_casts_) return;
  // fp32 master weight read, 16-bit copy written; the gradient goes back the
  // other way. The casts run inside the layer's own call: no Python call of
  // their own.
  ElementOp(name + ".cast.fwd", OpClass::kElementwise, spec_.precision, numel, 6 * numel, 0,
            tensors, Stage::kForward, /*python_calls=*/0);
  if (training()) {
    ElementOp(name + ".cast.bwd", OpClass::kElementwise, spec_.precision, numel, 6 * numel, 0,
              tensors, Stage::kBackward);
  }
}

void IterationBuilder::Linear(const std::string& name, double rows, int64_t in, int64_t out,
                              bool bias, bool input_grad) {
  const double weights = static_cast<double>(in) * out + (bias ? out : 0);
  const int64_t tensors = bias ? 2 : 1;
  AddParameters(weights, tensors);
  CastWeights(name, weights, tensors);
  Gemm(name + ".fwd", rows, out, in, 1, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, rows * out * act_bytes());
  if (!training()) return;
  activation_bytes_ += rows * in * act_bytes();
  if (input_grad) Gemm(name + ".dx", rows, in, out, 1, Stage::kBackward);
  Gemm(name + ".dw", out, in, rows, 1, Stage::kBackward);
  if (bias) {
    ElementOp(name + ".db", OpClass::kElementwise, matmul_precision(), rows * out,
              act_bytes() * rows * out + 4.0 * out, rows * out, 1, Stage::kBackward);
  }
}

void IterationBuilder::TiedLinear(const std::string& name, double rows, int64_t in, int64_t out,
                                  bool bias) {
  const double weights = static_cast<double>(in) * out;
  if (bias) AddParameters(static_cast<double>(out), 1);
  CastWeights(name, weights + (bias ? out : 0), bias ? 2 : 1);
  Gemm(name + ".fwd", rows, out, in, 1, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, rows * out * act_bytes());
  if (!training()) return;
  activation_bytes_ += rows * in * act_bytes();
  Gemm(name + ".dx", rows, in, out, 1, Stage::kBackward);
  Gemm(name + ".dw_shared", out, in, rows, 1, Stage::kBackward);
  if (bias) {
    ElementOp(name + ".db", OpClass::kElementwise, matmul_precision(), rows * out,
              act_bytes() * rows * out + 4.0 * out, rows * out, 1, Stage::kBackward);
  }
  // The owner's gradient already holds its own part: read, add, write fp32.
  ElementOp(name + ".accumulate", OpClass::kElementwise, Precision::kFp32, weights, 12 * weights,
            weights, 1, Stage::kBackward);
}

void IterationBuilder::Matmul(const std::string& name, double m, double n, double k,
                              double batch, bool rhs_constant) {
  Gemm(name + ".fwd", m, n, k, batch, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, m * n * batch * act_bytes());
  if (!training()) return;
  activation_bytes_ += (m * k + (rhs_constant ? 0 : k * n)) * batch * act_bytes();
  Gemm(name + ".dlhs", m, k, n, batch, Stage::kBackward);
  if (!rhs_constant) Gemm(name + ".drhs", k, n, m, batch, Stage::kBackward);
}

void IterationBuilder::Conv(const std::string& name, const ConvShape& s, bool bias,
                            bool input_grad) {
  const double kernel = static_cast<double>(s.kernel_h) * s.kernel_w;
  const double in_elems = static_cast<double>(s.batch) * s.channels_in * s.in_h * s.in_w;
  const double out_pixels = static_cast<double>(s.batch) * s.out_h * s.out_w;
  const double out_elems = out_pixels * s.channels_out;
  const double weights = static_cast<double>(s.channels_in) * s.channels_out * kernel;
  const double flops = 2 * out_elems * s.channels_in * kernel;
  const int64_t tensors = bias ? 2 : 1;
  AddParameters(weights + (bias ? s.channels_out : 0), tensors);
  CastWeights(name, weights + (bias ? s.channels_out : 0), tensors);

  auto make = [&](const std::string& suffix, double op_flops, double work_m, double work_n) {
    Operation op;
    op.op_class = OpClass::kConv;
    op.name = name + suffix;
    op.shape = {{"batch", s.batch},       {"channels_in", s.channels_in},
                {"channels_out", s.channels_out}, {"in_h", s.in_h},
                {"in_w", s.in_w},         {"out_h", s.out_h},
                {"out_w", s.out_w},       {"kernel_h", s.kernel_h},
                {"kernel_w", s.kernel_w}, {"stride", s.stride}};
    op.precision = conv_precision();
    op.flops = op_flops;
    op.bytes = act_bytes() * (in_elems + weights + out_elems);
    // Implicit GEMM view: output pixels x output channels (forward, dX over
    // input pixels x input channels, dW over weights).
    op.work_items = GemmTiles(work_m, work_n, 1);
    return op;
  };
  // Bias is added by a separate kernel after the convolution.
  Operation forward = make(".fwd", flops + (bias ? out_elems : 0), out_pixels, s.channels_out);
  if (bias) forward.launches = 2;
  forward.python_calls = 1;
  Add(std::move(forward), Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, out_elems * act_bytes());
  if (!training()) return;
  activation_bytes_ += in_elems * act_bytes();
  if (input_grad) {
    Add(make(".dx", flops, static_cast<double>(s.batch) * s.in_h * s.in_w, s.channels_in),
        Stage::kBackward);
  }
  Add(make(".dw", flops, s.channels_out, s.channels_in * kernel), Stage::kBackward);
  if (bias) {
    ElementOp(name + ".db", OpClass::kElementwise, matmul_precision(), out_elems,
              act_bytes() * out_elems + 4.0 * s.channels_out, out_elems, 1, Stage::kBackward);
  }
}

void IterationBuilder::Lstm(const std::string& name, int64_t layer, int64_t input, int64_t hidden,
                            int64_t seq_len, bool input_grad) {
  const double b = static_cast<double>(batch());
  const double t = static_cast<double>(seq_len);
  const double h = static_cast<double>(hidden);
  const double in = static_cast<double>(input);
  const double weights = 4 * h * (in + h) + 8 * h;  // W_ih, W_hh, b_ih, b_hh
  AddParameters(weights, 4);
  CastWeights(name, weights, 4);
  const double es = act_bytes();

  Operation op;
  op.op_class = OpClass::kRecurrent;
  op.shape = {{"batch", batch()}, {"seq_len", seq_len}, {"input", input},
              {"hidden", hidden}, {"layers", 1},        {"layer", layer}};
  op.precision = matmul_precision();
  // Recurrent work is serial over time: parallelism is one step's gate GEMM.
  op.work_items = GemmTiles(b, 4 * h, 1);
  Operation forward = op;
  forward.name = name + ".fwd";
  forward.flops = 2 * b * t * 4 * h * (in + h);
  forward.bytes = es * (b * t * in + 4 * h * (in + h) + 2 * b * t * h);
  forward.launches = LstmForwardLaunches(seq_len);
  // The whole stack is one nn.LSTM call.
  forward.python_calls = layer == 0 ? 1 : 0;
  const double forward_flops = forward.flops;
  Add(std::move(forward), Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, b * t * h * es);
  if (!training()) return;
  // cuDNN keeps the gate activations and h, c of every step.
  activation_bytes_ += es * b * t * (in + 6 * h);
  Operation backward = op;
  backward.name = name + ".bwd";
  backward.flops = 2 * forward_flops - (input_grad ? 0 : 2 * b * t * 4 * h * in);
  backward.bytes = es * (2 * b * t * in + 2 * 4 * h * (in + h) + 6 * b * t * h);
  backward.launches = LstmBackwardLaunches(seq_len);
  Add(std::move(backward), Stage::kBackward);
}

void IterationBuilder::Attention(const std::string& name, int64_t heads, int64_t seq_len,
                                 int64_t head_dim) {
  const double b = static_cast<double>(batch());
  const double h = static_cast<double>(heads);
  const double s = static_cast<double>(seq_len);
  const double d = static_cast<double>(head_dim);
  const double es = act_bytes();
  const double scores = b * h * s * s;
  Operation op;
  op.op_class = OpClass::kAttention;
  op.shape = {{"batch", batch()}, {"heads", heads}, {"seq_len", seq_len}, {"head_dim", head_dim}};
  op.precision = matmul_precision();
  op.work_items = GemmTiles(s, s, b * h);
  Operation forward = op;
  forward.name = name + ".fwd";
  forward.flops = 4 * scores * d + (1 + kSoftmaxFlops) * scores;
  // q, k, v read and the output written; scores written, scaled, softmaxed
  // and read back by the AV product.
  forward.bytes = es * (4 * b * s * h * d + 6 * scores);
  forward.launches = kAttentionForwardLaunches;
  forward.python_calls = kAttentionForwardLaunches;
  Add(std::move(forward), Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, scores * es);
  if (!training()) return;
  activation_bytes_ += es * (3 * b * s * h * d + 2 * scores);
  Operation backward = op;
  backward.name = name + ".bwd";
  backward.flops = 8 * scores * d + (1 + kSoftmaxBackwardFlops) * scores;
  backward.bytes = es * (8 * b * s * h * d + 10 * scores);
  backward.launches = kAttentionBackwardLaunches;
  Add(std::move(backward), Stage::kBackward);
}

void IterationBuilder::FusedAttention(const std::string& name, int64_t heads, int64_t seq_len,
                                      int64_t head_dim, bool causal) {
  const double b = static_cast<double>(batch());
  const double h = static_cast<double>(heads);
  const double s = static_cast<double>(seq_len);
  const double d = static_cast<double>(head_dim);
  const double es = act_bytes();
  // Causal kernels compute the blocks on and below the diagonal only.
  const double blocks = std::ceil(s / kAttentionBlock);
  const double computed = causal ? (blocks + 1) / (2 * blocks) : 1.0;
  const double scores = b * h * s * s * computed;
  const double head_elems = b * s * h * d;
  Operation op;
  op.op_class = OpClass::kAttention;
  op.shape = {{"batch", batch()},       {"heads", heads},           {"seq_len", seq_len},
              {"head_dim", head_dim},   {"causal", causal ? 1 : 0}, {"fused", 1}};
  op.precision = matmul_precision();
  op.work_items = blocks * b * h;
  Operation forward = op;
  forward.name = name + ".fwd";
  forward.flops = 4 * scores * d + (1 + kSoftmaxFlops) * scores;
  // q, k, v read, the output written, and the fp32 log-sum-exp per row.
  forward.bytes = es * 4 * head_elems + 4 * b * h * s;
  forward.python_calls = 1;
  Add(std::move(forward), Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, head_elems * es);
  if (!training()) return;
  activation_bytes_ += es * 4 * head_elems + 4 * b * h * s;
  Operation backward = op;
  backward.name = name + ".bwd";
  // Scores recomputed, then dV, dP, dQ and dK: five products of the forward's two.
  backward.flops = 10 * scores * d + (2 + kSoftmaxBackwardFlops) * scores;
  backward.bytes = es * 8 * head_elems + 8 * b * h * s;
  backward.launches = kFusedAttentionBackwardLaunches;
  Add(std::move(backward), Stage::kBackward);
}

void IterationBuilder::RmsNorm(const std::string& name, double rows, int64_t cols) {
  AddParameters(static_cast<double>(cols), 1);
  const double numel = rows * cols;
  const double es = norm_bytes();
  ElementOp(name + ".fwd", OpClass::kElementwise, norm_precision(), numel, 6 * numel * es,
            5 * numel, kRmsNormForwardLaunches, Stage::kForward, kRmsNormForwardCalls);
  peak_output_bytes_ = std::max(peak_output_bytes_, numel * es);
  if (!training()) return;
  activation_bytes_ += 3 * numel * es;
  ElementOp(name + ".bwd", OpClass::kElementwise, norm_precision(), numel, 10 * numel * es,
            kNormBackwardFlops * numel, kRmsNormBackwardLaunches, Stage::kBackward);
}

void IterationBuilder::LayerNorm(const std::string& name, double rows, int64_t cols) {
  AddParameters(2.0 * cols, 2);
  const double numel = rows * cols;
  const double es = norm_bytes();
  ElementOp(name + ".fwd", OpClass::kNorm, norm_precision(), numel, 2 * numel * es,
            kNormFlops * numel, 1, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, numel * es);
  if (!training()) return;
  activation_bytes_ += numel * es;
  // One kernel for dX, one for the dgamma/dbeta column reduction.
  ElementOp(name + ".bwd", OpClass::kNorm, norm_precision(), numel, 3 * numel * es,
            kNormBackwardFlops * numel, 2, Stage::kBackward);
}

void IterationBuilder::BatchNorm(const std::string& name, int64_t batch_size, int64_t channels,
                                 int64_t spatial) {
  AddParameters(2.0 * channels, 2);
  const double numel = static_cast<double>(batch_size) * channels * spatial;
  // Batch norm is not on autocast's fp32 list: it runs on the 16-bit
  // activations (with fp32 statistics), so its traffic is at activation width.
  const double es = act_bytes();
  // Training: a statistics pass and a normalise pass (reading the input twice).
  ElementOp(name + ".fwd", OpClass::kElementwise, matmul_precision(), numel,
            (training() ? 3 : 2) * numel * es, kNormFlops * numel, training() ? 2 : 1,
            Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, numel * es);
  if (!training()) return;
  activation_bytes_ += numel * es;
  ElementOp(name + ".bwd", OpClass::kElementwise, matmul_precision(), numel, 4 * numel * es,
            kNormBackwardFlops * numel, 2, Stage::kBackward);
}

void IterationBuilder::Elementwise(const std::string& name, double numel, int inputs,
                                   double flops_per_element, bool backward) {
  const double es = act_bytes();
  ElementOp(name + ".fwd", OpClass::kElementwise, matmul_precision(), numel,
            (inputs + 1) * numel * es, flops_per_element * numel, 1, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, numel * es);
  if (!training() || !backward) return;
  activation_bytes_ += numel * es;
  ElementOp(name + ".bwd", OpClass::kElementwise, matmul_precision(), numel,
            (1 + 2 * inputs) * numel * es, flops_per_element * numel, 1, Stage::kBackward);
}

void IterationBuilder::Softmax(const std::string& name, double rows, int64_t cols) {
  const double numel = rows * cols;
  const double es = norm_bytes();
  ElementOp(name + ".fwd", OpClass::kSoftmax, norm_precision(), numel, 2 * numel * es,
            kSoftmaxFlops * numel, 1, Stage::kForward);
  peak_output_bytes_ = std::max(peak_output_bytes_, numel * es);
  if (!training()) return;
  activation_bytes_ += numel * es;
  ElementOp(name + ".bwd", OpClass::kSoftmax, norm_precision(), numel, 3 * numel * es,
            kSoftmaxBackwardFlops * numel, 1, Stage::kBackward);
}

void IterationBuilder::Copy(const std::string& name, double numel, double element_bytes,
                            bool backward) {
  ElementOp(name + ".fwd", OpClass::kElementwise, matmul_precision(), numel,
            2 * numel * element_bytes, 0, 1, Stage::kForward);
  if (!training() || !backward) return;
  ElementOp(name + ".bwd", OpClass::kElementwise, matmul_precision(), numel,
            2 * numel * element_bytes, 0, 1, Stage::kBackward);
}

void IterationBuilder::Reduce(const std::string& name, double numel, double outputs) {
  const double es = act_bytes();
  ElementOp(name + ".fwd", OpClass::kElementwise, matmul_precision(), numel, (numel + outputs) * es,
            numel, 1, Stage::kForward);
  if (!training()) return;
  ElementOp(name + ".bwd", OpClass::kElementwise, matmul_precision(), numel, (numel + outputs) * es,
            numel, 1, Stage::kBackward);
}

void IterationBuilder::Embedding(const std::string& name, int64_t rows, int64_t dim,
                                 double lookups, int64_t bag) {
  const double table = static_cast<double>(rows) * dim;
  AddParameters(table, 1);
  const double outputs = lookups / bag * dim;
  Operation op;
  op.op_class = OpClass::kEmbedding;
  op.shape = {{"rows", rows},
              {"dim", dim},
              {"lookups", static_cast<int64_t>(lookups)},
              {"bag", bag}};
  // Tables stay fp32 under autocast.
  op.precision = norm_precision();
  op.work_items = ElementBlocks(lookups * dim);
  Operation forward = op;
  forward.name = name + ".fwd";
  forward.flops = bag > 1 ? lookups * dim : 0;
  forward.bytes = 8 * lookups + 4 * lookups * dim + 4 * outputs;
  forward.python_calls = 1;
  Add(std::move(forward), Stage::kForward);
  if (!training()) return;
  activation_bytes_ += 8 * lookups;
  // Dense gradient: zero the whole table, sort the ids, scatter-add the
  // incoming gradient rows (embedding_dense_backward / embedding_bag_backward).
  Operation backward = op;
  backward.name = name + ".bwd";
  backward.flops = lookups * dim;
  backward.bytes = 4 * table + 16 * lookups + 4 * outputs + 8 * lookups * dim;
  backward.launches = 4;
  backward.work_items = ElementBlocks(table);
  Add(std::move(backward), Stage::kBackward);
}

void IterationBuilder::Loss(const std::string& name, double numel, int64_t classes) {
  // Losses run in fp32 under autocast.
  const double es = norm_bytes();
  double fwd_flops = 3, bwd_flops = 2, fwd_launches = 2, bwd_launches = 2;
  if (classes > 1) {  // log_softmax + nll_loss
    fwd_flops = kSoftmaxFlops + 1;
    bwd_flops = kSoftmaxBackwardFlops + 1;
  } else if (name.find("bce") != std::string::npos) {
    // binary_cross_entropy_with_logits is a composite of several kernels.
    fwd_flops = 8;
    bwd_flops = 4;
    fwd_launches = 4;
    bwd_launches = 3;
  }
  ElementOp(name + ".fwd", OpClass::kElementwise, norm_precision(), numel, 3 * numel * es,
            fwd_flops * numel, fwd_launches, Stage::kForward);
  if (!training()) return;
  ElementOp(name + ".bwd", OpClass::kElementwise, norm_precision(), numel, 3 * numel * es,
            bwd_flops * numel, bwd_launches, Stage::kBackward);
}

WorkloadDescriptor IterationBuilder::Finish(double input_bytes, int64_t input_tensors,
                                            int64_t inner_modules, bool with_optimizer,
                                            bool with_copy, bool with_host) {
  if (training() && with_optimizer && parameters_ > 0 && spec_.optimizer != "none") {
    double flops = kAdamFlopsPerParam, bytes = kAdamBytesPerParam;
    if (spec_.optimizer == "adamw") {
      flops = kAdamWFlopsPerParam;
      bytes = kAdamWBytesPerParam;
    } else if (spec_.optimizer == "sgd") {
      flops = kSgdFlopsPerParam;
      bytes = kSgdBytesPerParam;
    }
    Operation op;
    op.op_class = OpClass::kOptimizer;
    op.name = absl::StrCat("optimizer.", spec_.optimizer, ".step");
    op.shape = {{"params", static_cast<int64_t>(parameters_)}, {"tensors", parameter_tensors_}};
    op.precision = Precision::kFp32;  // master weights and states stay fp32 under amp
    op.flops = flops * parameters_;
    op.bytes = bytes * parameters_;
    op.launches = OptimizerLaunches(spec_.optimizer, parameter_tensors_, parameters_);
    op.python_calls = OptimizerPythonCalls(spec_.optimizer, parameter_tensors_);
    op.work_items = ElementBlocks(parameters_);
    Add(std::move(op), Stage::kOptimizer);
  }
  if (with_copy && input_bytes > 0) {
    Operation op;
    op.op_class = OpClass::kHostToDevice;
    op.name = "input.h2d";
    op.shape = {{"bytes", static_cast<int64_t>(input_bytes)}, {"tensors", input_tensors}};
    op.precision = Precision::kFp32;
    op.bytes = input_bytes;
    op.launches = static_cast<double>(input_tensors);  // one cudaMemcpyAsync per tensor
    op.python_calls = static_cast<double>(input_tensors);  // one .to(device) each
    op.work_items = static_cast<double>(input_tensors);
    Add(std::move(op), Stage::kOther);
  }
  if (with_host) {
    // Framework work on the host per iteration: dispatch of every kernel
    // above plus the Python-free C++ loop itself. No device work: its cost is
    // priced from the kernel count and the host's measured speed.
    Operation op;
    op.op_class = OpClass::kHostOverhead;
    op.name = "host.iteration";
    op.shape = {{"kernels", static_cast<int64_t>(out_.kernel_launches)},
                {"ops", static_cast<int64_t>(out_.operations.size())},
                {"param_tensors", parameter_tensors_}};
    op.precision = Precision::kFp32;
    op.launches = 0;
    op.work_items = 0;
    op.python_calls = training() ? kTrainingStepPythonCalls : 0;
    Add(std::move(op), Stage::kOther);
  }
  out_.parameters = parameters_;
  out_.input_bytes = input_bytes;
  out_.inner_modules = inner_modules;
  out_.activation_bytes = training() ? activation_bytes_ : 2 * peak_output_bytes_;
  return std::move(out_);
}

}  // namespace perfcast::models

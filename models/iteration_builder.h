// IterationBuilder: the shared bookkeeping behind every family's descriptor.
// A family walks its architecture once, calling one method per layer
// (Linear, Conv, LayerNorm, ...); the builder appends the forward operations
// and, for training, the backward ones, counts trainable parameters and
// parameter tensors, and keeps the per-stage totals so that the operations
// always sum to the descriptor's totals. Internal to perfcast_models.
//
// Conventions (documented once here, relied on by tests and the predictor):
//  - FLOPs: a multiply-add is 2 FLOPs. GEMM/conv backward = dX + dW, each as
//    many FLOPs as the forward; dX is skipped where the input needs no
//    gradient (the model's first layer on data), as autograd does.
//  - Bytes: the minimum device-memory traffic of each kernel (read inputs and
//    weights once, write outputs once), element size of the precision the op
//    runs in.
//  - Launches: one kernel per forward op; backward of a GEMM/conv: dX, dW and
//    one bias-gradient reduction; element-wise/norm backward: 1-2 kernels.
//    Under amp, autocast casts each matmul weight tensor to 16 bits every
//    forward (one kernel per tensor) and casts its gradient back (one more).
//  - Python calls: one per forward layer call (a module or function call,
//    however many kernels it launches), none for the autocast casts inside it
//    or for backward (the autograd engine runs in C++); one per input copy;
//    the optimizer's per-parameter-tensor interpreter work and its foreach
//    calls; a training step's own (backward's entry, the optimizer's
//    wrappers) on the host record (Operation::python_calls).
#ifndef PERFCAST_MODELS_ITERATION_BUILDER_H_
#define PERFCAST_MODELS_ITERATION_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "models/descriptor.h"
#include "models/workload.h"

namespace perfcast::models {

// Shape of one convolution as a 2-D convolution (1-D convolutions have
// in_h = out_h = kernel_h = 1).
struct ConvShape {
  int64_t batch = 1;
  int64_t channels_in = 1;
  int64_t channels_out = 1;
  int64_t in_h = 1, in_w = 1;
  int64_t out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride = 1;
};

// Element size in bytes of a precision's storage type.
double ElementBytes(Precision precision);

class IterationBuilder {
 public:
  // `spec` must be normalised.
  explicit IterationBuilder(const WorkloadSpec& spec);

  IterationBuilder(const IterationBuilder&) = delete;
  IterationBuilder& operator=(const IterationBuilder&) = delete;

  bool training() const { return spec_.phase == Phase::kTrain; }
  int64_t batch() const { return spec_.batch_size; }
  // Precision of matmul-like work (GEMM, conv, attention, recurrent) and of
  // the activations between layers; norms, softmax and losses run in fp32
  // under amp.
  Precision matmul_precision() const;
  // Of convolutions: TF32 under fp32 (cuDNN's default), else matmul_precision().
  Precision conv_precision() const;
  Precision norm_precision() const;
  double act_bytes() const { return ElementBytes(matmul_precision()); }
  double norm_bytes() const { return ElementBytes(norm_precision()); }

  // ---- layers: forward op(s), and backward op(s) when training ----

  // y[rows, out] = x[rows, in] W^T (+ b). `input_grad`: whether dX is needed.
  void Linear(const std::string& name, double rows, int64_t in, int64_t out, bool bias,
              bool input_grad = true);
  // A Linear whose weight is another layer's [out, in] table (an LM head
  // tied to the token embedding): only the bias, if any, is a new parameter,
  // and the weight gradient (op ".dw_shared") is accumulated into the
  // owner's gradient.
  void TiedLinear(const std::string& name, double rows, int64_t in, int64_t out, bool bias);
  // A matmul without parameters (attention-free products, graph propagation):
  // both operands are activations; backward computes both gradients unless
  // `rhs_constant` (e.g. a fixed adjacency matrix).
  void Matmul(const std::string& name, double m, double n, double k, double batch,
              bool rhs_constant);
  void Conv(const std::string& name, const ConvShape& shape, bool bias, bool input_grad = true);
  // A stack of LSTM layers as one recurrent op per layer.
  void Lstm(const std::string& name, int64_t layer, int64_t input, int64_t hidden,
            int64_t seq_len, bool input_grad);
  // Scaled dot-product attention core: QK^T, scale, softmax, AV.
  void Attention(const std::string& name, int64_t heads, int64_t seq_len, int64_t head_dim);
  // Fused scaled dot-product attention as at::scaled_dot_product_attention
  // runs it on the GPU (flash / memory-efficient kernels): scores never reach
  // memory, and a causal mask skips the blocks above the diagonal. Shape
  // {batch, heads, seq_len, head_dim, causal, fused = 1}.
  void FusedAttention(const std::string& name, int64_t heads, int64_t seq_len, int64_t head_dim,
                      bool causal);
  void LayerNorm(const std::string& name, double rows, int64_t cols);
  // RMSNorm written out as Hugging Face's Llama does (fp32 pow, mean, add,
  // rsqrt, two muls), with a weight and no bias.
  void RmsNorm(const std::string& name, double rows, int64_t cols);
  void BatchNorm(const std::string& name, int64_t batch, int64_t channels, int64_t spatial);
  // Activation or binary op over `numel` elements. `inputs`: tensors read
  // (1 unary, 2 binary), `flops_per_element` forward; backward reads the
  // incoming gradient and the saved input(s) and writes one gradient per input.
  void Elementwise(const std::string& name, double numel, int inputs, double flops_per_element,
                   bool backward = true);
  // Row-wise softmax in fp32 (the classifier's log-softmax, standalone softmax).
  void Softmax(const std::string& name, double rows, int64_t cols);
  // Pure data movement (cat, stack, index_select, layout copies): one kernel
  // forward, and one backward unless the source needs no gradient.
  void Copy(const std::string& name, double numel, double element_bytes, bool backward = true);
  // Reduction of `numel` elements into `outputs` (pooling, mean).
  void Reduce(const std::string& name, double numel, double outputs);
  // Token/ID lookups into a [rows, dim] table, `lookups` ids in total, summed
  // in bags of `bag` ids (bag 1: plain embedding). Dense gradient (the
  // default of nn::Embedding/EmbeddingBag).
  void Embedding(const std::string& name, int64_t rows, int64_t dim, double lookups, int64_t bag);
  // Loss over `numel` prediction elements: "mse", "cross_entropy" (numel =
  // batch x classes), "bce".
  void Loss(const std::string& name, double numel, int64_t classes);

  // Adds a raw operation to a stage (for operation families).
  enum class Stage { kForward, kBackward, kOptimizer, kOther };
  void Add(Operation op, Stage stage);
  // Adds trainable parameters without operations (none needed so far by
  // models; operation families use it).
  void AddParameters(double count, int64_t tensors);

  // Appends the optimizer step (training), the host->device copy of
  // `input_bytes` in `input_tensors` copies, and the per-iteration host op,
  // then returns the descriptor. `with_optimizer`/`with_host`: operation
  // families describe one op only.
  WorkloadDescriptor Finish(double input_bytes, int64_t input_tensors, int64_t inner_modules,
                            bool with_optimizer = true, bool with_copy = true,
                            bool with_host = true);

  // Operation families run directly in their precision: no autocast casts.
  void set_autocast_casts(bool on) { autocast_casts_ = on; }

  double parameters() const { return parameters_; }

 private:
  // Each adds one op whose Operation::python_calls is one in forward and
  // none otherwise (the rule in the file comment), unless `python_calls`
  // says otherwise.
  void Gemm(const std::string& name, double m, double n, double k, double batch, Stage stage);
  void CastWeights(const std::string& name, double numel, int64_t tensors);
  void ElementOp(const std::string& name, OpClass op_class, Precision precision, double numel,
                 double bytes, double flops, double launches, Stage stage,
                 std::optional<double> python_calls = std::nullopt);

  WorkloadSpec spec_;
  WorkloadDescriptor out_;
  double parameters_ = 0;
  int64_t parameter_tensors_ = 0;
  double activation_bytes_ = 0;
  double peak_output_bytes_ = 0;
  bool autocast_casts_ = true;
};

// Tiles of 128 x 128 output elements: the unit of work of a GEMM/conv kernel.
double GemmTiles(double m, double n, double batch);
// Blocks of 1024 elements: the unit of work of an element-wise kernel.
double ElementBlocks(double numel);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_ITERATION_BUILDER_H_

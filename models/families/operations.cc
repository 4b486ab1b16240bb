// Operation families: micro-benchmarks of one operation. Each describes
// exactly one Operation record with count 1 and no copy or host record. For
// phase train the record is the forward and the backward of the operation
// together (gemm: C = A B plus dA and dB; conv2d: forward, dX, dW; ...), its
// FLOPs split into forward_flops and backward_flops; for inference it is the
// forward alone. The optimizer family is one optimizer step (phase is always
// train) and h2d one host->device copy (phase is always inference).
// Operation tensors are created in the precision itself: no autocast casts.
//
// Families whose parameters fix the whole shape (gemm, elementwise, layernorm,
// softmax, optimizer, h2d) ignore the batch size: NormalizeSpec sets it to 1
// so that equal work has equal keys.
#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/architecture.h"
#include "models/families/families.h"
#include "models/hardware.h"
#include "models/iteration_builder.h"

namespace perfcast::models::families {
namespace {

// Collapses the builder's operations into the family's one record.
WorkloadDescriptor Collapse(WorkloadDescriptor d, OpClass op_class, int64_t inner_modules,
                            bool uses_batch) {
  Operation op;
  op.op_class = op_class;
  op.name = absl::StrCat(d.spec.family, d.spec.phase == Phase::kTrain ? ".fwd+bwd" : ".fwd");
  op.shape = d.spec.params;
  if (uses_batch) op.shape["batch"] = d.spec.batch_size;
  op.precision = d.operations.empty() ? d.spec.precision : d.operations.front().precision;
  op.flops = op.bytes = op.launches = op.python_calls = 0;
  for (const Operation& part : d.operations) {
    op.flops += part.flops * part.count;
    op.bytes += part.bytes * part.count;
    op.launches += part.launches * part.count;
    op.python_calls += part.python_calls * part.count;
  }
  op.work_items = d.operations.empty() ? 1 : d.operations.front().work_items;
  // The harness times forward+backward as one autograd::grad call; an
  // optimizer step is no backward pass.
  op.autograd_calls = d.spec.phase == Phase::kTrain && op_class != OpClass::kOptimizer ? 1 : 0;
  d.operations = {op};
  d.kernel_launches = op.launches;
  d.inner_modules = inner_modules;
  return d;
}

WorkloadDescriptor Finish(IterationBuilder& b, OpClass op_class, int64_t inner_modules,
                          bool uses_batch) {
  return Collapse(b.Finish(0, 0, inner_modules, /*with_optimizer=*/false, /*with_copy=*/false,
                           /*with_host=*/false),
                  op_class, inner_modules, uses_batch);
}

WorkloadDescriptor DescribeGemm(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.set_autocast_casts(false);
  b.Matmul("gemm", static_cast<double>(Param(spec, "m")), static_cast<double>(Param(spec, "n")),
           static_cast<double>(Param(spec, "k")), static_cast<double>(Param(spec, "batch")),
           /*rhs_constant=*/false);
  return Finish(b, OpClass::kGemm, 1, false);
}

WorkloadDescriptor DescribeConv2d(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.set_autocast_casts(false);
  const int64_t kernel = Param(spec, "kernel");
  const int64_t stride = Param(spec, "stride");
  ConvShape shape;
  shape.batch = spec.batch_size;
  shape.channels_in = Param(spec, "channels_in");
  shape.channels_out = Param(spec, "channels_out");
  shape.in_h = Param(spec, "height");
  shape.in_w = Param(spec, "width");
  shape.out_h = ConvOutputSize(shape.in_h, kernel, stride, kernel / 2);
  shape.out_w = ConvOutputSize(shape.in_w, kernel, stride, kernel / 2);
  shape.kernel_h = shape.kernel_w = kernel;
  shape.stride = stride;
  b.Conv("conv2d", shape, /*bias=*/false, /*input_grad=*/true);
  return Finish(b, OpClass::kConv, 1, true);
}

WorkloadDescriptor DescribeLstmCell(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.set_autocast_casts(false);
  const int64_t layers = Param(spec, "layers");
  const int64_t hidden = Param(spec, "hidden");
  for (int64_t l = 0; l < layers; ++l) {
    b.Lstm(absl::StrCat("lstm.layer", l), l, l == 0 ? Param(spec, "input") : hidden, hidden,
           Param(spec, "seq_len"), /*input_grad=*/true);
  }
  return Finish(b, OpClass::kRecurrent, layers, true);
}

WorkloadDescriptor DescribeAttention(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.Attention("attention", Param(spec, "heads"), Param(spec, "seq_len"), Param(spec, "head_dim"));
  return Finish(b, OpClass::kAttention, 1, true);
}

WorkloadDescriptor DescribeSdpa(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.FusedAttention("sdpa", Param(spec, "heads"), Param(spec, "seq_len"), Param(spec, "head_dim"),
                   Param(spec, "causal") == 1);
  return Finish(b, OpClass::kAttention, 1, true);
}

WorkloadDescriptor DescribeRmsNorm(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.RmsNorm("rmsnorm", static_cast<double>(Param(spec, "rows")), Param(spec, "cols"));
  return Finish(b, OpClass::kElementwise, 1, false);
}

WorkloadDescriptor DescribeSwiGlu(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  const double numel = static_cast<double>(Param(spec, "rows")) * Param(spec, "cols");
  b.Elementwise("swiglu.silu", numel, 1, 5);
  b.Elementwise("swiglu.mul", numel, 2, 1);
  return Finish(b, OpClass::kElementwise, 1, false);
}

WorkloadDescriptor DescribeCrossEntropy(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.Loss("cross_entropy", static_cast<double>(Param(spec, "rows")) * Param(spec, "vocab"),
         Param(spec, "vocab"));
  return Finish(b, OpClass::kElementwise, 1, false);
}

WorkloadDescriptor DescribeElementwise(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.Elementwise("elementwise", static_cast<double>(Param(spec, "numel")), 1, 1);
  return Finish(b, OpClass::kElementwise, 1, false);
}

WorkloadDescriptor DescribeLayerNorm(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.LayerNorm("layernorm", static_cast<double>(Param(spec, "rows")), Param(spec, "cols"));
  return Finish(b, OpClass::kNorm, 1, false);
}

WorkloadDescriptor DescribeSoftmax(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.Softmax("softmax", static_cast<double>(Param(spec, "rows")), Param(spec, "cols"));
  return Finish(b, OpClass::kSoftmax, 1, false);
}

WorkloadDescriptor DescribeEmbedding(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.Embedding("embedding", Param(spec, "rows"), Param(spec, "dim"),
              static_cast<double>(spec.batch_size) * Param(spec, "lookups"), 1);
  return Finish(b, OpClass::kEmbedding, 1, true);
}

// The optimizer operation is the update itself: "none" leaves nothing to time.
absl::Status CheckOptimizer(const WorkloadSpec& spec) {
  if (spec.optimizer == "none") {
    return absl::InvalidArgumentError(
        "optimizer: parameter 'optimizer' = 'none' describes no update (expected adam, adamw "
        "or sgd)");
  }
  return absl::OkStatus();
}

WorkloadDescriptor DescribeOptimizer(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  b.AddParameters(static_cast<double>(Param(spec, "params")), 1);
  return Collapse(b.Finish(0, 0, 1, /*with_optimizer=*/true, /*with_copy=*/false,
                           /*with_host=*/false),
                  OpClass::kOptimizer, 1, false);
}

WorkloadDescriptor DescribeH2d(const WorkloadSpec& spec) {
  IterationBuilder b(spec);
  WorkloadDescriptor d = b.Finish(static_cast<double>(Param(spec, "bytes")), 1, 1,
                                  /*with_optimizer=*/false, /*with_copy=*/true,
                                  /*with_host=*/false);
  d.operations.front().name = "h2d";
  d.operations.front().shape = spec.params;
  return d;
}

// One all-reduce of `bytes` over `gpus` GPUs. Its record carries the bytes
// each GPU moves by a ring (2(n-1)/n of the message) and the additions.
WorkloadDescriptor DescribeAllReduce(const WorkloadSpec& spec) {
  const double bytes = static_cast<double>(Param(spec, "bytes"));
  const double gpus = static_cast<double>(Param(spec, "gpus"));
  IterationBuilder b(spec);
  Operation op;
  op.op_class = OpClass::kCollective;
  op.name = "allreduce";
  op.shape = spec.params;
  op.bytes = 2 * (gpus - 1) / gpus * bytes;
  op.flops = (gpus - 1) / gpus * bytes / 4;
  b.Add(std::move(op), IterationBuilder::Stage::kForward);
  return b.Finish(0, 0, 1, /*with_optimizer=*/false, /*with_copy=*/false, /*with_host=*/false);
}

FamilyDef Op(const char* name, const char* doc, std::vector<ParamInfo> params,
             WorkloadDescriptor (*describe)(const WorkloadSpec&),
             absl::Status (*check)(const WorkloadSpec&) = &NoConstraints) {
  FamilyDef def;
  def.info = {name, WorkloadKind::kOperation, doc, std::move(params)};
  def.check = check;
  def.describe = describe;
  return def;
}

FamilyDef WithoutBatch(FamilyDef def) {
  def.uses_batch = false;
  return def;
}

FamilyDef WithFixedPhase(FamilyDef def, Phase phase) {
  def.uses_batch = false;
  def.uses_precision = false;
  def.fixed_phase = true;
  def.phase = phase;
  return def;
}

}  // namespace

std::vector<FamilyDef> OperationFamilies() {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  constexpr int64_t kMaxElements = int64_t{1} << 36;
  return {
      WithoutBatch(Op("gemm",
         "Batched GEMM C[batch, m, n] = A[batch, m, k] B[batch, k, n]; train adds dA and dB. "
         "Ignores the batch size (use 'batch').",
         {{"m", 1024, 1, kMaxDim, "rows of A and C"},
          {"n", 1024, 1, kMaxDim, "columns of B and C"},
          {"k", 1024, 1, kMaxDim, "inner dimension"},
          {"batch", 1, 1, 65536, "independent products (bmm batch)"}},
         &DescribeGemm)),
      Op("conv2d",
         "Conv2d without bias on [batch, channels_in, height, width], padding kernel/2; "
         "train adds dX and dW.",
         {{"channels_in", 64, 1, 65536, "input channels"},
          {"channels_out", 64, 1, 65536, "output channels"},
          {"height", 56, 1, 16384, "input height"},
          {"width", 56, 1, 16384, "input width"},
          {"kernel", 3, 1, 31, "square kernel size"},
          {"stride", 1, 1, 16, "stride"}},
         &DescribeConv2d),
      Op("lstm_cell",
         "cuDNN LSTM over [batch, seq_len, input], `layers` layers of `hidden`; train adds "
         "the backward through time.",
         {{"input", 256, 1, 65536, "input features"},
          {"hidden", 256, 1, 65536, "hidden units"},
          {"seq_len", 32, 1, 65536, "time steps"},
          {"layers", 1, 1, 64, "stacked layers"}},
         &DescribeLstmCell),
      Op("attention",
         "Unfused scaled dot-product attention (QK^T, scale, softmax, AV) over [batch, heads, "
         "seq_len, head_dim]; train adds dQ, dK, dV.",
         {{"heads", 8, 1, 1024, "attention heads"},
          {"seq_len", 512, 1, 131072, "sequence length"},
          {"head_dim", 64, 1, 1024, "width per head"}},
         &DescribeAttention),
      Op("sdpa",
         "Fused scaled dot-product attention (flash / memory-efficient kernels) over [batch, "
         "heads, seq_len, head_dim], causal or not; train adds dQ, dK, dV.",
         {{"heads", 16, 1, 1024, "attention heads"},
          {"seq_len", 1024, 1, 131072, "sequence length"},
          {"head_dim", 64, 1, 256, "width per head"},
          {"causal", 1, 0, 1, "1: causal mask (decoders), 0: none (encoders)"}},
         &DescribeSdpa),
      WithoutBatch(Op("rmsnorm",
         "RMSNorm over the last dimension of [rows, cols] as Llama writes it, fp32 statistics. "
         "Ignores the batch size.",
         {{"rows", 8192, 1, kMaxElements, "rows"}, {"cols", 4096, 1, kMaxDim, "normalised width"}},
         &DescribeRmsNorm)),
      WithoutBatch(Op("swiglu",
         "SwiGLU activation SiLU(gate) * up of a fused [rows, 2 x cols] projection. Ignores "
         "the batch size.",
         {{"rows", 8192, 1, kMaxElements, "rows (tokens)"},
          {"cols", 11008, 1, kMaxDim, "output width (intermediate_size)"}},
         &DescribeSwiGlu)),
      WithoutBatch(Op("cross_entropy",
         "Cross-entropy (log-softmax + NLL) of fp32 logits [rows, vocab] against class ids; "
         "train adds its backward. Ignores the batch size.",
         {{"rows", 8192, 1, kMaxElements, "rows (tokens)"},
          {"vocab", 50257, 2, 4194304, "classes (vocabulary)"}},
         &DescribeCrossEntropy)),
      WithoutBatch(Op("elementwise",
         "A unary activation (ReLU-like, 1 FLOP/element) over numel elements; train adds its "
         "backward. Ignores the batch size.",
         {{"numel", 1 << 24, 1, kMaxElements, "elements"}}, &DescribeElementwise)),
      WithoutBatch(Op("layernorm", "LayerNorm over the last dimension of [rows, cols], fp32 under amp.",
         {{"rows", 8192, 1, kMaxElements, "rows"}, {"cols", 1024, 1, kMaxDim, "normalised width"}},
         &DescribeLayerNorm)),
      WithoutBatch(Op("softmax", "Row-wise softmax of [rows, cols], fp32 under amp.",
         {{"rows", 8192, 1, kMaxElements, "rows"}, {"cols", 1024, 1, kMaxDim, "softmax width"}},
         &DescribeSoftmax)),
      Op("embedding",
         "Embedding lookup of batch x lookups ids into a [rows, dim] fp32 table; train adds "
         "the dense table gradient.",
         {{"rows", 100000, 1, 1000000000, "table rows"},
          {"dim", 128, 1, 65536, "row width"},
          {"lookups", 64, 1, 1 << 20, "ids per sample"}},
         &DescribeEmbedding),
      WithFixedPhase(Op("optimizer",
         "One optimizer step (spec optimizer: adam, adamw or sgd) over one fp32 tensor of `params` "
         "parameters. Always train; ignores batch size and precision.",
         {{"params", 1 << 24, 1, kMaxElements, "parameters updated"}}, &DescribeOptimizer,
         &CheckOptimizer), Phase::kTrain),
      WithFixedPhase(Op("h2d",
         "One host->device copy of `bytes` bytes from pinned (1) or pageable (0) memory. "
         "Always inference; ignores batch size and precision.",
         {{"bytes", 1 << 24, 1, kMaxElements, "bytes copied"},
          {"pinned", 1, 0, 1, "1: page-locked host buffer"}},
         &DescribeH2d), Phase::kInference),
      WithFixedPhase(Op("allreduce",
         "One all-reduce (sum) of a `bytes`-byte fp32 tensor over `gpus` GPUs, one process "
         "per GPU (NCCL on GPUs, Gloo on CPUs). Always inference; ignores batch size and "
         "precision.",
         {{"bytes", 1 << 24, 4, int64_t{1} << 40, "message size"},
          {"gpus", 2, 2, kMaxGpusPerNode, "GPUs (processes) taking part"}},
         &DescribeAllReduce), Phase::kInference),
  };
}

}  // namespace perfcast::models::families

// Analytic workload descriptors. From a workload spec (family + architecture
// parameters + batch + precision + phase) compute, without running anything:
// exact trainable parameter count, FLOPs and bytes moved per iteration,
// activation memory, kernel launches, and the decomposition of one iteration
// into operations that the predictor's operation-class models price.
//
// Plain C++: perfcastd uses this to describe workloads in prediction requests
// and imported measurements; the LibTorch proxies (models/torch) are built to
// the same architectures and tested against these numbers.
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_MODELS_DESCRIPTOR_H_
#define PERFCAST_MODELS_DESCRIPTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"

namespace perfcast::models {

// Operation classes whose cost the predictor models separately, because their
// efficiency (achieved / peak) is stable per class across GPU generations.
enum class OpClass {
  kGemm,             // dense matmul / linear layers (incl. batched)
  kConv,             // convolutions (1-D and 2-D)
  kRecurrent,        // recurrent cells (LSTM), per layer and sequence
  kAttention,        // scaled dot-product attention core
  kElementwise,      // activations, adds, casts, batch norm, losses: memory bound
  kEmbedding,        // embedding table lookups / bags
  kOptimizer,        // optimizer update over all parameters
  kHostToDevice,     // input batch copy host -> device
  kHostOverhead,     // per-iteration framework/host work not on the device
  kCollective,       // communication between GPUs (all-reduce benchmarks); priced
                     // by the communication model, never by a roofline
  // Row reductions have their own efficiency (a row per block or warp, two
  // passes over the data), unlike the streaming element-wise kernels:
  kNorm,             // layer norm, forward and backward
  kSoftmax,          // row-wise softmax, forward and backward
};

// Stable names: "gemm", "conv", "recurrent", "attention", "elementwise",
// "embedding", "optimizer", "h2d", "host", "collective", "norm", "softmax".
absl::string_view OpClassName(OpClass op_class);
absl::StatusOr<OpClass> ParseOpClass(absl::string_view name);
// All classes, in enum order.
const std::vector<OpClass>& AllOpClasses();

// One operation of an iteration, or `count` identical ones.
struct Operation {
  OpClass op_class = OpClass::kGemm;
  std::string name;                      // where it sits, e.g. "layer3.ffn.up.fwd"
  std::map<std::string, int64_t> shape;  // class-specific, e.g. gemm {m, n, k, batch}
  Precision precision = Precision::kFp32;  // precision the math runs in (amp
                                           // matmuls: fp16/bf16; norms: fp32)
  double flops = 0;       // floating-point operations per call
  double bytes = 0;       // minimum device-memory traffic per call
  double launches = 1;    // kernel launches per call
  double work_items = 1;  // independent tiles/blocks of work per call (for waves over SMs)
  double count = 1;       // calls per iteration
  // Entries into the autograd engine per call (torch::autograd::grad): 1 for
  // an operation micro-benchmark's forward+backward, which the harness times
  // one grad call at a time, and 0 for the operations of a model, whose step
  // enters autograd once for all of them. The entry is host work (handing the
  // graph to the engine's device thread and waiting for it) of some tens of
  // microseconds, whatever the operation.
  double autograd_calls = 0;
  // Python-level calls per call that an eager PyTorch loop makes to run it,
  // whatever kernels they launch: the one module or function call that
  // dispatches a forward operation (a stack of torch LSTM layers is one call
  // launching cuDNN kernels for every step), the input copies, the
  // optimizer's interpreter work per parameter tensor besides its foreach
  // calls, and a training step's own (on the host record). 0 for backward
  // operations: the autograd engine dispatches their kernels from C++, host
  // work that goes with the kernel launches.
  double python_calls = 0;

  friend bool operator==(const Operation&, const Operation&) = default;
};

// Where the user's own implementation of a model runs differently from the
// family as perfcast describes it and the agent runs it (set from the
// model's source: models::ImplementationEffectsOf); none for a workload
// given by its family and parameters. The pricing adds what each costs
// (predictor/python_loop.h).
struct ImplementationEffects {
  // Host syncs per forward: Hugging Face's decoders read a device value on
  // the host in every forward (the causal mask), so the queue drains.
  int host_syncs_per_forward = 0;
  // torchvision's nn.MultiheadAttention takes its slow path (in training and
  // under autocast): copies and strided adds around the same attention.
  bool attention_slow_path = false;
  // Hugging Face's BERT does more host work per kernel than the family's own
  // layout (nested modules, per-layer view and mask calls in Python).
  bool heavy_python_dispatch = false;

  friend bool operator==(const ImplementationEffects&, const ImplementationEffects&) = default;
};

// Everything known analytically about one iteration (one training step or
// one inference batch) of a workload. Totals are per iteration unless named
// per sample.
struct WorkloadDescriptor {
  WorkloadSpec spec;               // normalised: defaults filled in
  double parameters = 0;           // trainable parameters, exact
  double forward_flops = 0;
  double backward_flops = 0;       // 0 for inference
  double optimizer_flops = 0;      // 0 for inference
  double forward_bytes = 0;
  double backward_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;     // activations kept for backward (estimate)
  double input_bytes = 0;          // host -> device bytes per iteration
  int64_t inner_modules = 0;       // the family's size knob: layers / blocks
  double kernel_launches = 0;      // per iteration, all operations
  double python_calls = 0;         // per iteration, all operations (Operation::python_calls)
  std::vector<Operation> operations;  // sums to the totals above
  ImplementationEffects implementation;

  double total_flops() const { return forward_flops + backward_flops + optimizer_flops; }
  double total_bytes() const { return forward_bytes + backward_bytes + optimizer_bytes; }
};

// A family's architecture parameter: its default and accepted range.
struct ParamInfo {
  std::string name;
  int64_t default_value = 0;
  int64_t min_value = 0;
  int64_t max_value = 0;
  std::string doc;
};

// A workload family (model) or an operation family (micro-benchmark).
struct FamilyInfo {
  std::string name;  // "lstm", "cnn", "stgcn", "resnet", "transformer", "dlrm",
                     // "decoder", "bert", "vit", "resnet_imagenet";
                     // operation families: "gemm", "conv2d", "lstm_cell",
                     // "attention", "sdpa", "rmsnorm", "swiglu",
                     // "cross_entropy", "elementwise", "layernorm", "softmax",
                     // "embedding", "optimizer", "h2d"
  WorkloadKind kind = WorkloadKind::kModel;
  std::string doc;
  std::vector<ParamInfo> params;
};

// Every family descriptors know, models first.
const std::vector<FamilyInfo>& Families();
// NotFound for an unknown family name.
absl::StatusOr<FamilyInfo> FindFamily(absl::string_view name);

// The largest batch size a workload may state: far beyond any real
// iteration, small enough that sizes times batch stay exact in a double.
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 24;

// Fills in defaulted parameters and checks the spec: known family of the
// right kind, no unknown parameters, every value in range, batch in
// [1, kMaxBatchSize], and
// the family's own constraints (e.g. hidden divisible by heads).
// InvalidArgument names the offending parameter.
absl::StatusOr<WorkloadSpec> NormalizeSpec(const WorkloadSpec& spec);

// Describes one iteration of a workload. Normalises first; the same errors.
absl::StatusOr<WorkloadDescriptor> Describe(const WorkloadSpec& spec);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_DESCRIPTOR_H_

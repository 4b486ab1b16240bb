// The layout vocabulary of a multi-GPU training step and its validation.
//
// A layout runs N × T × P GPUs: N data-parallel replicas of a model split
// T-way by tensor parallelism inside each layer and P-way by pipeline
// parallelism across layers, each replica's batch cut into M micro-batches;
// a ZeRO stage shards optimizer states (1), and gradients (2), and
// parameters (3) across the N replicas (FSDP's FULL_SHARD is stage 3,
// SHARD_GRAD_OP stage 2); activation checkpointing keeps each layer's input
// and recomputes the rest in backward. The framework is the software that
// runs the layout: the same layout costs differ by implementation (PyTorch's
// eager DTensor TP and per-parameter DDP hooks against Megatron's fused
// kernels), so the step's implementation terms are per framework.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_LAYOUT_H_
#define PERFCAST_PREDICTOR_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/workload.h"

namespace perfcast::predictor {

enum class Framework {
  // DDP, FSDP2, DTensor TP, torch.distributed.pipelining (1F1B), eager.
  kPytorch,
  // Megatron-LM (and Megatron-DeepSpeed): fused kernels, vocabulary-parallel
  // head, non-interleaved 1F1B, the distributed optimizer as ZeRO-1.
  kMegatron,
  // DeepSpeed's ZeRO engine and pipeline engine.
  kDeepspeed,
};

// "pytorch", "megatron", "deepspeed".
absl::string_view FrameworkName(Framework framework);
// The inverse of FrameworkName; InvalidArgument naming --framework otherwise.
absl::StatusOr<Framework> ParseFramework(absl::string_view name);

struct ParallelLayout {
  int data = 1;           // N: replicas
  int tensor = 1;         // T: tensor-parallel degree
  int pipeline = 1;       // P: pipeline stages
  int micro_batches = 1;  // M: micro-batches per replica and step
  int zero = 0;           // ZeRO stage, 0-3, over the N replicas
  Framework framework = Framework::kPytorch;
  bool activation_checkpointing = false;

  int gpus() const { return data * tensor * pipeline; }
  // Whether the layout is the plain one-GPU step.
  bool single_gpu() const {
    return gpus() == 1 && micro_batches == 1 && zero == 0 && !activation_checkpointing &&
           framework == Framework::kPytorch;
  }
  friend bool operator==(const ParallelLayout&, const ParallelLayout&) = default;
};

// For people and table rows: "DP4 TP2 PP2 M8 ZeRO-3 ckpt megatron"; degrees
// of 1, ZeRO-0, no checkpointing and the pytorch framework are left out
// ("1 GPU" when nothing is left).
std::string DescribeLayout(const ParallelLayout& layout);

// For rows of a layout search: "dp4·tp2·pp2·m8·zero3·ckpt" — the degrees
// above 1 (the data-parallel degree always), the ZeRO stage above 0,
// checkpointing; the framework is the search's, not the row's.
std::string LayoutName(const ParallelLayout& layout);

// Checks a layout against a workload: every degree >= 1, ZeRO in [0, 3] and
// only with more than one replica, the batch a multiple of data ×
// micro-batches, tensor parallelism dividing the heads (and key/value heads)
// and the MLP width, at most one pipeline stage per layer, tensor and
// pipeline parallelism only for families with attention heads, PyTorch's
// 1F1B with at least as many micro-batches as stages (Megatron's
// non-interleaved 1F1B runs with fewer), the framework supporting the
// strategy (Megatron shards optimizer states only: ZeRO <= 1; DeepSpeed's
// pipeline engine takes ZeRO <= 1 and its ZeRO engine no tensor
// parallelism of its own), and the job within `max_gpus` when that is set
// (0: no limit). InvalidArgument naming the flag and the constraint.
absl::Status ValidateLayout(const models::WorkloadSpec& spec, const ParallelLayout& layout,
                            int max_gpus);
// The same for a spec already normalised (models::NormalizeSpec's answer):
// what a search that checks thousands of layouts of one workload calls.
absl::Status ValidateNormalizedLayout(const models::WorkloadSpec& normalized,
                                      const ParallelLayout& layout, int max_gpus);

// What a layout does to a described operation, read from the names the
// descriptor builder gives them (models/iteration_builder.h):
// "layer12.attn.qkv.fwd" is in layer 12; none outside the layers.
std::optional<int64_t> OperationLayer(absl::string_view name);
// Whether the operation runs in backward (".dx", ".dw", ".bwd", ...).
bool IsBackwardOperation(absl::string_view name);
// Whether `framework`'s tensor parallelism splits the operation across the
// group: the attention and MLP of every layer except their residual adds;
// Megatron (and DeepSpeed running Megatron's layers) also the token
// embedding, LM head and loss by vocabulary, which PyTorch's DTensor plans
// over the blocks leave whole on every GPU.
bool TensorParallelSplits(absl::string_view name, bool has_lm_head, Framework framework);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_LAYOUT_H_

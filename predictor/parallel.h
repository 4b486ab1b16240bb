// Multi-GPU training steps: data, tensor (Megatron) and pipeline (1F1B)
// parallelism composed from the single-GPU two-level model and the
// communication model (collectives.h).
//
// A layout runs N × T × P GPUs: N data-parallel replicas of a model split
// T-way by tensor parallelism inside each layer and P-way by pipeline
// parallelism across layers, each replica's batch cut into M micro-batches.
// The workload's batch size is the global batch of one step, so one GPU
// processes batch / (N · M) samples per micro-batch.
//
// How one step is priced:
//  - Compute: the workload at the micro-batch size is described and
//    predicted on one GPU (level 2); each operation gets its level-1 time
//    scaled by level 2 ÷ level 1, so that the parts below add up to the
//    single-GPU prediction. Tensor parallelism divides the FLOPs, bytes and
//    tiles of the operations Megatron splits (attention and MLP of every
//    layer: `layer<i>.attn.*`, `layer<i>.ffn.*`, `layer<i>.mlp.*` except the
//    residual adds; the token embedding, LM head and its loss are split by
//    vocabulary) and re-prices them at level 1, so that smaller GEMMs are
//    as inefficient as the level-1 model says. Pipeline stages take
//    contiguous runs of layers (embeddings on the first, head and loss on
//    the last).
//  - Tensor-parallel communication: 2 all-reduces of the layer's activation
//    (micro-batch × seq_len × hidden) forward and 2 backward per layer (2
//    more when checkpointing runs the forward again), one forward for the
//    vocabulary-parallel embedding and one backward for the LM head; on the
//    critical path.
//  - Pipeline: 1F1B with stage times t_s per micro-batch (including their
//    tensor-parallel all-reduces and the point-to-point send of the
//    boundary activation forward and its gradient backward) takes
//    Σ_s t_s + (M − 1) · max_s t_s; the bubble is Σ_s t_s − max_s t_s, i.e.
//    (P − 1)/(M + P − 1) of the step for equal stages.
//  - Data-parallel gradient all-reduce: the GPU's gradients (parameters ÷
//    (T · P), fp32 or fp64 as the master weights) in DDP buckets overlapped
//    with the last micro-batch's backward; only what runs past it is added.
//  - The optimizer step updates parameters ÷ (T · P) once per step, and ÷ N
//    more under ZeRO (any stage shards the optimizer states).
//  - Activation checkpointing runs every layer's forward again in backward.
//  - The framework's implementation terms, learned from measured steps
//    (parallel_terms.h), re-price each operation class its own kernels run
//    differently (and, for Megatron, the work outside the layers) and bound
//    the composed step from below. Megatron's vocabulary-parallel loss is
//    described as it runs, fp32 casts and separate reduction kernels, not
//    as PyTorch's fused loss.
//  - Memory per GPU is the layout memory model's (layout_memory.h); the
//    layout's vocabulary and validation are layout.h's.
//
// Ranks are placed as Megatron does: tensor-parallel groups innermost, then
// data-parallel, then pipeline. A group that spans more GPUs than one node
// holds crosses the network.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_PARALLEL_H_
#define PERFCAST_PREDICTOR_PARALLEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "predictor/collectives.h"
#include "predictor/layout.h"
#include "predictor/layout_memory.h"
#include "predictor/parallel_terms.h"
#include "predictor/model.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

struct ParallelOptions {
  // The most GPUs the job may use (a registered node's GPU count); 0: no
  // limit (a GPU known from the catalog, as many servers as needed).
  int max_gpus = 0;
  // GPUs per node for placing groups; 0: eight (an HGX/DGX board), or the
  // GPU's NVLink domain if larger.
  int gpus_per_node = 0;
  // Bus bandwidth measured by an all-reduce benchmark inside the node; it
  // replaces the spec-sheet NVLink/PCIe link.
  std::optional<Link> measured_link;
  double bucket_bytes = kDdpBucketBytes;
  // The implementation terms; none: ParallelTerms::BuiltIn().
  const ParallelTerms* terms = nullptr;
  // What the workload's own implementation does (its model's source, e.g. a
  // Hugging Face config: models::ImplementationEffectsOf), which its family
  // and parameters cannot say: each micro-batch is priced with it, and the
  // host terms read its dispatch weight.
  models::ImplementationEffects implementation;
};

struct ParallelPrediction {
  ParallelLayout layout;
  // The single-GPU prediction of one micro-batch of the whole model: the
  // base every part below is scaled from.
  Prediction micro_batch;
  double step_ms = 0;  // one step: every micro-batch, communication and the optimizer
  double lo_ms = 0;    // the single-GPU band, scaled
  double hi_ms = 0;
  // The parts of step_ms, which they sum to:
  double compute_ms = 0;    // M · the slowest stage's forward + backward compute
  double recompute_ms = 0;  // of compute_ms: checkpointed forward run again
  double bubble_ms = 0;     // pipeline fill and drain
  double tp_comm_ms = 0;    // tensor-parallel all-reduces on the critical path
  double pp_comm_ms = 0;    // pipeline point-to-point sends on the critical path
  double dp_exposed_ms = 0; // the gradient all-reduce not hidden behind backward
  double optimizer_ms = 0;
  double dp_comm_ms = 0;    // the whole gradient all-reduce, hidden or not
  // What the framework's implementation adds to the composed step
  // (parallel_terms.h), and what its terms read: one GPU's kernel launches
  // per step and the layers (or the family's inner modules) it holds.
  double implementation_ms = 0;
  double launches = 0;
  int64_t units = 0;
  // What the host terms in the Python loop's units read (parallel_terms.h):
  // the node's Python host cost per operation (python_loop.h's HostCostOf),
  // the Python loop's host work per kernel launch at that cost, and the
  // model's dispatch weight (its heavy dispatch scale, else 1).
  double python_op_us = 0;
  double python_ms_per_launch = 0;
  double dispatch_scale = 1;
  int dp_buckets = 0;
  // Of compute_ms, the slowest stage's work outside the layers (embeddings,
  // final norm, LM head and loss) per operation class and step; and of
  // bubble_ms, the other stages' work outside the layers. What a term on that
  // work (ImplementationTerm::outside_layers_scale) is learned from.
  std::map<std::string, double> outside_layers_ms;
  double outside_layers_bubble_ms = 0;
  // Compute per operation class and step on the slowest stage (ms), plus
  // "comm.tp_allreduce", "comm.pp_p2p", "comm.dp_allreduce" and
  // "pipeline_bubble"; sums to step_ms.
  std::map<std::string, double> breakdown_ms;
  // Device memory per GPU (layout_memory.h).
  LayoutMemory memory;
  // The links each kind of communication used (empty source: not used).
  Link tp_link, dp_link, pp_link;
};

// Prices layouts of one workload on GPUs like one node's. What layouts
// share is worked out on first use and kept: each micro-batch size's
// description, single-GPU prediction and memory terms, and each
// tensor-parallel degree's per-operation times; a layout then costs a walk
// over the operations. A layout search prices thousands of layouts at the
// cost of a few distinct micro-batches and degrees.
//
// Not thread-safe (it fills its memo): one plan per thread. `model` must
// outlive the plan.
class ParallelPlan {
 public:
  ParallelPlan(const PredictorModel& model, const models::WorkloadSpec& spec,
               const models::Node& node, ParallelOptions options = {});
  ~ParallelPlan();
  ParallelPlan(const ParallelPlan&) = delete;
  ParallelPlan& operator=(const ParallelPlan&) = delete;

  // PredictParallel(model, spec, node, layout, options).
  absl::StatusOr<ParallelPrediction> Predict(const ParallelLayout& layout);
  // The memory per GPU of `layout` alone (what Predict's answer carries),
  // without pricing it: what a search drops layouts by before pricing them.
  // The layout is not validated. Errors: models::Describe's and those of
  // the single-GPU prediction of its micro-batch.
  absl::StatusOr<LayoutMemory> Memory(const ParallelLayout& layout);

  const models::Node& node() const { return node_; }
  const ParallelOptions& options() const { return options_; }

 private:
  struct MicroBatch;
  struct Shard;
  MicroBatch& MicroBatchOf(int64_t batch);
  const Shard& ShardOf(MicroBatch& micro, int tensor, Framework framework);

  const PredictorModel& model_;
  const models::WorkloadSpec raw_spec_;
  const absl::StatusOr<models::WorkloadSpec> spec_;  // normalised
  const models::Node node_;
  const ParallelOptions options_;
  const PricingPlan single_;
  // What PredictOperationTimes works out per call, once: level 1 compiled
  // and the node's rates.
  const Level1Plan level1_;
  const absl::StatusOr<EffectiveRates> rates_;
  absl::flat_hash_map<int64_t, std::unique_ptr<MicroBatch>> micro_batches_;  // by batch size
};

// Predicts one training step of `spec` laid out as `layout` on GPUs like
// `node`'s. Whether its memory fits is the caller's to check
// (CheckLayoutFits). Errors: InvalidArgument from ValidateLayout, for an inference
// workload with more than one GPU, or a GPU without link bandwidth for the
// layout; otherwise those of Describe and PricingPlan::Predict.
absl::StatusOr<ParallelPrediction> PredictParallel(const PredictorModel& model,
                                                   const models::WorkloadSpec& spec,
                                                   const models::Node& node,
                                                   const ParallelLayout& layout,
                                                   const ParallelOptions& options = {});

// The step as a Prediction, for callers that answer single- and multi-GPU
// questions alike: iteration_ms is the step, the band and breakdown are the
// step's, the method, features and rate source are the micro-batch's.
Prediction AsPrediction(const ParallelPrediction& parallel);

// "nvlink 360 GB/s, 3 us"; empty for a link that was not used.
std::string DescribeLink(const Link& link);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PARALLEL_H_

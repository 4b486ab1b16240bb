// The implementation terms of a multi-GPU step: what the software that runs
// a layout adds to the step composed from the single-GPU model, learned from
// measured multi-GPU steps (data/tools/fit_parallel_terms.py writes
// predictor/parallel_terms.json, compiled in; data/README.md says from what).
//
// Per framework and strategy the step is composed from each GPU's operations,
// each class's time multiplied by the term's class scale where the workload's
// precision is one it was learned on, and then bounded:
//   max((composed + tp_collectives × per_tp_collective) × (1 + gpu_scale)
//           + dp_comm_contention × dp_comm,
//       launches × per_launch + slots × host_ms_per_micro_batch
//       + tp_collectives × per_host_tp_collective
//       + units × host_ms_per_unit
//       + units × CollectiveCallsPerUnit × host_ms_per_collective)
// with, per kernel launch,
//   per_launch = host_ms_per_launch
//       + loop_ms × (host_loop_scale × dispatch + host_hook_scale)
// where op_ms is the node's Python host cost per operation (python_loop.h's
// HostCostOf: its probe, else its CPU score's estimate, else a reference
// host's), loop_ms the Python loop's host work per launch at that cost
// (ops_per_launch of the phase × op_ms) and dispatch the model's heavy
// dispatch scale where its implementation has one (else 1). So a term in
// those units follows the node's speed and the model's Python: the
// single-GPU loop's own host work (host_loop_scale, the model's dispatch
// weight included) and what the implementation adds per launch whatever the
// model's Python (host_hook_scale: DDP's autograd hooks and bucket copies),
// each in multiples of the Python loop's; the ms terms are a constant host
// (Megatron's, learned where the host was not measured).
// where `launches` are the kernel launches of one GPU's step, counted over
// every 1F1B slot (M + P − 1 slots of the slowest stage's micro-batch: a
// stage whose host dispatches slower than its GPU computes paces the pipeline
// fill and drain too), `slots` those M + P − 1 slots (each runs the
// schedule's own work once per micro-batch on every stage, however few layers
// the stage holds: the step function, the loss, the point-to-point calls),
// `units` the layers it holds, and `tp_collectives` the
// tensor-parallel all-reduces on the critical path (M + P − 1 slots of the
// slowest stage's all-reduces per micro-batch), each costing
// per_tp_collective = tp_collective_ms + tp_collective_ms_per_peer × (T − 1)
// beyond what the link prices its bytes at (the implementation's own wait per
// collective, growing with the ranks it waits for); the host pays its own
// per_host_tp_collective = host_ms_per_tp_collective +
// host_ms_per_tp_collective_per_peer × (T − 1) for each of them (the call into
// the collective library, and the ranks' dispatch meeting at each one: a
// host-bound step waits for the slowest of its T ranks); and dp_comm the
// whole gradient all-reduce's time, hidden behind backward or not: its
// kernels share the SMs and memory with the backward they overlap, which
// slows by a share of the all-reduce's own time (a scale on the compute
// alone would charge a model with few gradients per FLOP, a CNN, the
// contention of one with many, a decoder). So: the GPU's work slowed
// by the implementation (communication contending with compute, unfused
// kernels, per-collective waits), or the host's dispatch when that is longer
// (DDP's per-parameter hooks, DTensor's dispatch per operation, FSDP's
// per-layer all-gather and reduce-scatter calls, Megatron's Python dispatch
// per kernel), whichever bounds the step. A framework or strategy without
// terms adds nothing.
//
// The step's 10-90% band is the single-GPU model's on the uncertain parts
// (compute, bubble, optimizer, implementation), scaled about the step by
// interval_scale where one is learned: the answers' band calibrated on
// steps priced without their model (fit_parallel_terms.py).
//
// Thread-safe: immutable after construction.
#ifndef PERFCAST_PREDICTOR_PARALLEL_TERMS_H_
#define PERFCAST_PREDICTOR_PARALLEL_TERMS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/descriptor.h"
#include "models/workload.h"
#include "predictor/layout.h"

namespace perfcast::predictor {

// The strategy a layout's implementation terms are keyed by: "tp" when
// tensor parallelism is on (its dispatch dominates), else "pp", else "fsdp"
// (ZeRO >= 1 over replicas), else "ddp"; "" for one GPU.
std::string ImplementationStrategy(const ParallelLayout& layout);

// The collective calls a sharded layout makes per unit (layer) and step,
// each with its host work (copy-in, the call, copy-out, hooks): FSDP's
// all-gather before the unit's forward, again before its backward under
// ZeRO-3 (which freed the gathered weights after forward), and the
// reduce-scatter of its gradients. 0 without ZeRO or with one replica.
int CollectiveCallsPerUnit(const ParallelLayout& layout);

struct ImplementationTerm {
  double gpu_scale = 0;
  // Of the data-parallel gradient all-reduce's time, what its overlap adds
  // to the GPU's step (above).
  double dp_comm_contention = 0;
  double host_ms_per_launch = 0;
  double host_ms_per_unit = 0;
  double host_ms_per_collective = 0;
  // In units of the node's Python loop (above): multiples of its host work
  // per launch, with and without the model's dispatch weight.
  double host_loop_scale = 0;
  double host_hook_scale = 0;
  double tp_collective_ms = 0;           // per tensor-parallel all-reduce
  double tp_collective_ms_per_peer = 0;  // per all-reduce and rank beyond the first
  double host_ms_per_micro_batch = 0;    // per 1F1B slot of the slowest stage
  // The host's share of each tensor-parallel all-reduce, and its growth per
  // rank beyond the first.
  double host_ms_per_tp_collective = 0;
  double host_ms_per_tp_collective_per_peer = 0;
  // The step band's distances from the step, scaled (0: none learned, 1).
  double interval_scale = 0;
  // Memory per GPU's 10-90% band around the layout memory model's peak, as
  // ratios to it (low <= 1 <= high; 0: none learned): the spread of the
  // model's error on the measured layouts of this framework, wide enough to
  // hold 80% of the peaks of models it was not learned on.
  double memory_low_ratio = 0;
  double memory_high_ratio = 0;
  // A factor on each GPU's compute of an operation class (1 for a class left
  // out) when the workload runs in one of `class_scale_precisions`: what the
  // framework's own kernels take against the single-GPU model, which learned
  // PyTorch's (Megatron fuses softmax, bias-GELU, bias-dropout-add and Adam,
  // and materialises attention scores where PyTorch runs a fused kernel).
  // Other precisions are priced as the single-GPU model says: the scales were
  // learned on steps of those precisions, where the fused paths run.
  std::map<models::OpClass, double> class_scale;
  std::vector<models::Precision> class_scale_precisions;
  // A factor on the work outside the layers (embeddings, final norm, LM head
  // and its loss), on top of its classes' scales, in the same precisions:
  // the head's vocabulary-wide GEMMs and the loss over the logits are kernels
  // of other shapes than the layers' that the class scales were learned on,
  // and at P > 1 they sit on one stage, which the step then waits for.
  double outside_layers_scale = 1;
  int rows = 0;  // measured steps it was fitted on

  // class_scale's factor for `op_class` in a workload of `precision`.
  double ClassScale(models::OpClass op_class, models::Precision precision) const;
  // outside_layers_scale in a workload of `precision` (1 in the others).
  double OutsideLayersScale(models::Precision precision) const;
};

class ParallelTerms {
 public:
  // Parses {"terms": [{"framework", "strategy", "gpu_scale", "dp_comm_contention",
  // "host_ms_per_launch", "host_ms_per_unit", "host_ms_per_collective",
  // "host_loop_scale", "host_hook_scale",
  // "tp_collective_ms", "tp_collective_ms_per_peer", "host_ms_per_micro_batch",
  // "host_ms_per_tp_collective", "host_ms_per_tp_collective_per_peer",
  // "interval_scale",
  // "memory_low_ratio", "memory_high_ratio", "class_scale": {"<op class>":
  // factor, ...}, "class_scale_precisions": ["fp16-amp", ...],
  // "outside_layers_scale", "rows"}, ...]}; a term left out is 0, a class
  // scale or the outside-layers scale left out 1. InvalidArgument for
  // malformed JSON, an unknown framework, operation class or precision, a
  // negative or non-finite term, a class or outside-layers scale that is not
  // > 0, either without precisions, or a memory band that does not hold 1.
  static absl::StatusOr<ParallelTerms> FromJson(absl::string_view json);
  // The compiled-in predictor/parallel_terms.json.
  static const ParallelTerms& BuiltIn();

  // The term of `layout`'s framework and strategy; none: zero.
  ImplementationTerm Find(const ParallelLayout& layout) const;

 private:
  std::map<std::pair<Framework, std::string>, ImplementationTerm> terms_;
};

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PARALLEL_TERMS_H_

// Device memory per GPU of a training step under any layout: the one memory
// model that predict, batches, sweeps and recommend share, and the verdict
// that refuses a layout that does not fit with the nearest change that does.
//
// The base is the calibrated single-GPU peak (memory.h) of one micro-batch:
// its persistent terms (master weights, gradients, optimizer states,
// autocast's 16-bit copies) are divided by T · P and, per ZeRO stage, by N
// (stage 1 the optimizer states, 2 also the gradients, 3 also the weights;
// PyTorch's FSDP2 shards the weights at stage 2 too and gathers 16-bit
// copies per layer in place of autocast's); its calibrated transient rest
// (activations and workspaces) is divided by T where the framework's tensor
// parallelism splits the operations (Megatron: the layers' projections,
// embedding and head; PyTorch's DTensor: the layers' projections only, its
// embedding, norms, head and their parameters whole on every GPU), cut to a
// pipeline stage's layers and multiplied by the micro-batches 1F1B keeps in
// flight on the first stage (min(M, P)), the last stage holding with its
// own micro-batch, under PyTorch's pipelining, every micro-batch's logits
// (its schedule returns them merged); under activation checkpointing a
// layer keeps only its input, and one layer's activations live again while
// it is recomputed. ZeRO-3 holds the unsharded parameters of the layer it
// computes and the one it prefetches, and their gradients before the
// reduce-scatter. DDP keeps its gradient buckets beside the gradients. The
// caching allocator's slack and the CUDA context come on top, as on one GPU.
// With layout 1 × 1 × 1 the answer is EstimateMemory's.
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_LAYOUT_MEMORY_H_
#define PERFCAST_PREDICTOR_LAYOUT_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "predictor/layout.h"
#include "predictor/memory.h"

namespace perfcast::predictor {

// Bytes per GPU.
struct LayoutMemory {
  double parameters = 0;  // master weights
  double gradients = 0;
  double optimizer = 0;   // optimizer states
  double amp_copies = 0;  // autocast's 16-bit weight copies
  double gathered = 0;    // ZeRO-3: unsharded layers computed and prefetched
  double buckets = 0;     // communication buckets
  double activations = 0; // activations and workspaces of the in-flight micro-batches
  // The optimizer step's own temporaries (foreach Adam's denominators):
  // they set the peak instead when the step holds more than backward.
  double optimizer_temporaries = 0;
  double slack = 0;    // the caching allocator's share on top of the peak
  double context = 0;  // CUDA context and kernels
  std::string method;  // EstimateMemory's: "calibrated:<scope>" or "analytic"
  // The allocated peak's 10-90% band: the spread learned on measured
  // layouts of the framework (parallel_terms.h), else the
  // single-GPU calibration's band on the activations.
  double allocated_low = 0;
  double allocated_high = 0;

  // The allocated peak: the step's or the optimizer's, whichever is larger.
  double allocated() const;
  // What the device must hold.
  double required() const { return allocated() + slack + context; }
};

// Memory per GPU of `layout` for one micro-batch described by `micro` (the
// workload at batch / (N · M) samples). The layout is not validated.
LayoutMemory EstimateLayoutMemory(const MemoryModel& model,
                                  const models::WorkloadDescriptor& micro,
                                  const ParallelLayout& layout);

// What the estimate reads of a micro-batch's description, worked out once:
// a layout search prices many layouts of one micro-batch, and reading the
// terms walks every operation.
struct LayoutMemoryInputs {
  models::WorkloadSpec spec;  // of the micro-batch
  MemoryTerms terms;          // AnalyticMemory's
  MemoryEstimate transient;   // the calibrated estimate without the persistent terms
  int64_t layers = 0;
  double layer_share = 0;  // of the forward traffic, inside the layers
  double split_share = 0;  // of the forward traffic, what tensor parallelism splits
  double layer_split_share = 0;  // of split_share, inside the layers (DTensor's split)
  double outside_parameter_share = 0;  // of the parameters, outside the layers
  // The micro-batch's logits (an LM head's output), which PyTorch's pipeline
  // schedules keep on the last stage for every micro-batch until the step
  // returns them.
  double output_bytes = 0;
  double largest_gathered_unit = 0;  // parameters ZeRO-3 gathers at once (training)
};
LayoutMemoryInputs PrepareLayoutMemory(const MemoryModel& model,
                                       const models::WorkloadDescriptor& micro);
// EstimateLayoutMemory(model, micro, layout) from PrepareLayoutMemory(model, micro).
LayoutMemory EstimateLayoutMemory(const LayoutMemoryInputs& prepared,
                                  const ParallelLayout& layout);

// The same for the global workload `spec` (batch of one step): describes
// its micro-batch first. Errors: models::Describe's.
absl::StatusOr<LayoutMemory> EstimateLayoutMemory(const MemoryModel& model,
                                                  const models::WorkloadSpec& spec,
                                                  const ParallelLayout& layout);

// `memory` in the form a single-GPU estimate takes (CheckMemoryFit's): the
// allocated peak with its band and what the device must hold.
MemoryEstimate AsMemoryEstimate(const LayoutMemory& memory);

// The nearest valid layout from `layout` that fits on `gpu` (required() <=
// its memory): raising ZeRO, then activation checkpointing, then both, then
// more data-parallel replicas (with the highest ZeRO stage the framework
// runs), within `max_gpus` (0: up to 1024). None when nothing tried fits.
std::optional<ParallelLayout> NearestFittingLayout(const MemoryModel& model,
                                                   const models::WorkloadSpec& spec,
                                                   const models::GpuSpec& gpu,
                                                   const ParallelLayout& layout, int max_gpus);

// OK when `memory` fits on `gpu` (a GPU of unknown memory size fits);
// otherwise FailedPrecondition with the breakdown and the nearest change
// that fits: "... does not fit: needs 251.1 GiB per GPU (parameters 3.7,
// ...), H100-SXM5-80GB has 79.6 GiB; fits with --zero 3".
absl::Status CheckLayoutFits(const MemoryModel& model, const models::WorkloadSpec& spec,
                             const models::GpuSpec& gpu, const ParallelLayout& layout,
                             const LayoutMemory& memory, int max_gpus);

// "--zero 3 --activation-checkpointing" / "--data-parallel 8 --zero 3 (4
// more GPUs)": the flags that turn `from` into `to`.
std::string DescribeChange(const ParallelLayout& from, const ParallelLayout& to);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_LAYOUT_MEMORY_H_

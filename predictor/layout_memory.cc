#include "predictor/layout_memory.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "base/status_macros.h"
#include "models/architecture.h"
#include "models/iteration_builder.h"
#include "predictor/collectives.h"
#include "predictor/parallel_terms.h"

namespace perfcast::predictor {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The most GPUs the nearest-fit search tries when nothing limits it.
constexpr int kMaxSuggestedGpus = 1024;

// What the step's transient memory is made of, read from the operations.
struct Shares {
  int64_t layers = 0;
  double layer = 0;  // share of the forward traffic inside the layers
  double split = 0;  // share that tensor parallelism splits
  double layer_split = 0;  // of `split`, what is inside the layers
};

Shares SharesOf(const models::WorkloadDescriptor& d, int tensor) {
  Shares s;
  bool has_lm_head = false;
  for (const models::Operation& op : d.operations) {
    has_lm_head |= absl::StartsWith(op.name, "lm_head");
    if (auto l = OperationLayer(op.name)) s.layers = std::max(s.layers, *l + 1);
  }
  double forward = 0, layer = 0, split = 0, layer_split = 0;
  for (const models::Operation& op : d.operations) {
    if (IsBackwardOperation(op.name) || op.op_class == models::OpClass::kOptimizer ||
        op.op_class == models::OpClass::kHostToDevice ||
        op.op_class == models::OpClass::kHostOverhead) {
      continue;
    }
    const double bytes = op.count * op.bytes;
    forward += bytes;
    const bool in_layer = OperationLayer(op.name).has_value();
    if (in_layer) layer += bytes;
    if (tensor > 1 && TensorParallelSplits(op.name, has_lm_head, Framework::kMegatron)) {
      split += bytes;
      if (in_layer) layer_split += bytes;
    }
  }
  if (forward > 0) {
    s.layer = layer / forward;
    s.split = split / forward;
    s.layer_split = layer_split / forward;
  }
  return s;
}

// Parameters of one layer and of what is outside the layers (embeddings,
// head, final norm): the units FSDP wraps (the outside as the root) and
// what DTensor's tensor parallelism leaves whole.
struct ParameterUnits {
  double layer = 0;
  double outside = 0;
};

ParameterUnits ParameterUnitsOf(const models::WorkloadDescriptor& d) {
  const int64_t layers = std::max<int64_t>(1, models::Param(d.spec, "layers") > 0
                                                   ? models::Param(d.spec, "layers")
                                                   : d.inner_modules);
  if (models::Param(d.spec, "layers") > 1) {
    models::WorkloadSpec fewer = d.spec;
    fewer.params["layers"] -= 1;
    absl::StatusOr<models::WorkloadDescriptor> less = models::Describe(fewer);
    if (less.ok()) {
      const double layer = d.parameters - less->parameters;
      return {.layer = layer, .outside = std::max(0.0, d.parameters - layer * layers)};
    }
  }
  return {.layer = d.parameters / layers, .outside = 0};
}

std::string Gib(double bytes) { return absl::StrFormat("%.1f", bytes / kGiB); }

}  // namespace

double LayoutMemory::allocated() const {
  const double step =
      parameters + gradients + optimizer + amp_copies + gathered + buckets + activations;
  const double optimizer_step = parameters + gradients + optimizer + optimizer_temporaries;
  return std::max(step, optimizer_step);
}

LayoutMemoryInputs PrepareLayoutMemory(const MemoryModel& model,
                                       const models::WorkloadDescriptor& micro) {
  LayoutMemoryInputs prepared;
  prepared.spec = micro.spec;
  const MemoryInputs inputs = MemoryInputsOf(micro);
  prepared.terms = inputs.terms;
  // The calibrated rest alone: the persistent terms are sharded per layout.
  MemoryInputs transient_only = inputs;
  MemoryTerms& t = transient_only.terms;
  t.weights = t.gradients = t.optimizer_state = t.amp_copies = t.optimizer_temporaries = 0;
  prepared.transient = EstimateMemory(model, transient_only);
  // Which operations tensor parallelism splits does not depend on its degree.
  const Shares shares = SharesOf(micro, /*tensor=*/2);
  prepared.layers = shares.layers;
  prepared.layer_share = shares.layer;
  prepared.split_share = shares.split;
  prepared.layer_split_share = shares.layer_split;
  for (const models::Operation& op : micro.operations) {
    if (absl::StartsWith(op.name, "lm_head")) {
      prepared.output_bytes = static_cast<double>(micro.spec.batch_size) *
                              models::Param(micro.spec, "seq_len") *
                              models::Param(micro.spec, "vocab") *
                              models::ElementBytes(micro.spec.precision);
      break;
    }
  }
  const ParameterUnits units = ParameterUnitsOf(micro);
  if (micro.parameters > 0) prepared.outside_parameter_share = units.outside / micro.parameters;
  if (micro.spec.phase == models::Phase::kTrain) {
    prepared.largest_gathered_unit = std::max(units.layer, units.outside);
  }
  return prepared;
}

LayoutMemory EstimateLayoutMemory(const MemoryModel& model,
                                  const models::WorkloadDescriptor& micro,
                                  const ParallelLayout& layout) {
  return EstimateLayoutMemory(PrepareLayoutMemory(model, micro), layout);
}

LayoutMemory EstimateLayoutMemory(const LayoutMemoryInputs& prepared,
                                  const ParallelLayout& layout) {
  const models::WorkloadSpec& spec = prepared.spec;
  const MemoryEstimate& transient = prepared.transient;
  const MemoryTerms& terms = prepared.terms;

  const int n = layout.data, tp = layout.tensor, p = layout.pipeline;
  const bool pytorch = layout.framework == Framework::kPytorch;
  // DTensor's tensor parallelism splits the layers' projections only: the
  // embedding, norms, head and loss stay whole on every GPU (Megatron
  // splits the embedding and head by vocabulary).
  const bool dtensor = pytorch && tp > 1;
  const double whole = dtensor ? prepared.outside_parameter_share : 0;
  const double model_split = static_cast<double>(p) / ((1 - whole) / tp + whole);
  // FSDP2 (PyTorch's ZeRO-2 and 3) keeps every parameter sharded and
  // gathers 16-bit copies per unit (its mixed-precision policy's parameter
  // dtype), so autocast casts nothing: ZeRO-2 keeps the gathered copies of
  // every unit from forward to backward, ZeRO-3 only the units `gathered`
  // counts.
  const bool fsdp = pytorch && layout.zero >= 2 && n > 1;
  auto shard = [&](double bytes, int stage) {
    return bytes / model_split / (layout.zero >= stage ? n : 1);
  };
  LayoutMemory m;
  m.method = transient.method;
  m.parameters = shard(terms.weights, fsdp ? 2 : 3);
  m.gradients = shard(terms.gradients, 2);
  m.optimizer = shard(terms.optimizer_state, 1);
  m.optimizer_temporaries = shard(terms.optimizer_temporaries, 1);
  m.amp_copies = fsdp && layout.zero >= 3 ? 0 : shard(terms.amp_copies, 3);
  const bool training = spec.phase == models::Phase::kTrain;
  if (training && layout.zero >= 3) {
    const double master = spec.precision == models::Precision::kFp64 ? 8 : 4;
    m.gathered = prepared.largest_gathered_unit / tp *
                 (2 * models::ElementBytes(spec.precision) + master);
  }
  if (training && n > 1) {
    // DDP copies every gradient into its buckets; Megatron reduces its
    // contiguous gradient buffer in place; sharded reductions stage a few
    // buckets at a time.
    const bool ddp_copies = layout.zero == 0 && layout.framework == Framework::kPytorch;
    const bool in_place = layout.zero == 0 && layout.framework == Framework::kMegatron;
    m.buckets = ddp_copies ? m.gradients
                : in_place ? 0
                           : std::min(m.gradients, 2 * kDdpBucketBytes);
  }

  const Shares shares{.layers = prepared.layers,
                      .layer = prepared.layer_share,
                      .split = tp == 1  ? 0
                               : dtensor ? prepared.layer_split_share
                                         : prepared.split_share};
  double in_layers = transient.peak_bytes * shares.layer;
  const double outside = transient.peak_bytes - in_layers;
  if (layout.activation_checkpointing && shares.layers > 0) {
    // Each layer keeps its input; the layer being recomputed holds its own.
    const int64_t boundary = spec.batch_size * models::Param(spec, "seq_len") *
                             models::Param(spec, "hidden");
    const double inputs_kept =
        boundary > 0 ? static_cast<double>(boundary) * models::ElementBytes(spec.precision) *
                           shares.layers
                     : in_layers / shares.layers;
    in_layers = std::min(in_layers, inputs_kept + in_layers / shares.layers);
  }
  const double split = 1 - shares.split + shares.split / tp;
  if (p == 1 || shares.layers == 0) {
    m.activations = (in_layers + outside) * split;
  } else {
    const int64_t stage_layers = (shares.layers + p - 1) / p;
    const double stage = in_layers * static_cast<double>(stage_layers) / shares.layers;
    const int in_flight = training ? std::min(layout.micro_batches, p) : 1;
    // The first stage holds the most micro-batches; the last the head's,
    // and under PyTorch's schedules the logits of every micro-batch.
    const double kept_outputs = pytorch ? layout.micro_batches * prepared.output_bytes : 0;
    m.activations =
        std::max(stage * in_flight * split, (stage + outside) * split + kept_outputs);
  }
  m.slack = m.allocated() * kAllocatorSlack;
  m.context = kCudaContextBytes;
  const double peak = m.allocated();
  const ImplementationTerm term = ParallelTerms::BuiltIn().Find(layout);
  if (term.memory_low_ratio > 0) {
    m.allocated_low = peak * term.memory_low_ratio;
    m.allocated_high = peak * term.memory_high_ratio;
  } else {
    const double calibrated = transient.peak_bytes > 0 ? transient.peak_bytes : 1;
    m.allocated_low = std::min(
        peak, peak - m.activations * (1 - transient.low_bytes / calibrated));
    m.allocated_high = std::max(
        peak, peak + m.activations * (transient.high_bytes / calibrated - 1));
  }
  return m;
}

absl::StatusOr<LayoutMemory> EstimateLayoutMemory(const MemoryModel& model,
                                                  const models::WorkloadSpec& spec,
                                                  const ParallelLayout& layout) {
  models::WorkloadSpec micro = spec;
  micro.batch_size =
      std::max<int64_t>(1, spec.batch_size / (int64_t{layout.data} * layout.micro_batches));
  ASSIGN_OR_RETURN(models::WorkloadDescriptor described, models::Describe(micro));
  return EstimateLayoutMemory(model, described, layout);
}

MemoryEstimate AsMemoryEstimate(const LayoutMemory& memory) {
  MemoryEstimate out;
  out.terms.weights = memory.parameters;
  out.terms.gradients = memory.gradients;
  out.terms.optimizer_state = memory.optimizer;
  out.terms.amp_copies = memory.amp_copies;
  out.terms.activations = memory.activations;
  out.terms.optimizer_temporaries = memory.optimizer_temporaries;
  out.peak_bytes = memory.allocated();
  out.low_bytes = memory.allocated_low;
  out.high_bytes = memory.allocated_high;
  out.required_bytes = memory.required();
  out.method = memory.method;
  return out;
}

std::optional<ParallelLayout> NearestFittingLayout(const MemoryModel& model,
                                                   const models::WorkloadSpec& spec,
                                                   const models::GpuSpec& gpu,
                                                   const ParallelLayout& layout, int max_gpus) {
  const double device = gpu.memory_gib * kGiB;
  auto fits = [&](const ParallelLayout& candidate) {
    if (!ValidateLayout(spec, candidate, max_gpus).ok()) return false;
    absl::StatusOr<LayoutMemory> m = EstimateLayoutMemory(model, spec, candidate);
    return m.ok() && m->required() <= device;
  };
  const int top_zero = layout.framework == Framework::kMegatron ? 1 : 3;
  std::vector<ParallelLayout> tries;
  for (int zero = layout.zero + 1; zero <= top_zero; ++zero) {
    ParallelLayout c = layout;
    c.zero = zero;
    tries.push_back(c);
  }
  if (!layout.activation_checkpointing) {
    ParallelLayout c = layout;
    c.activation_checkpointing = true;
    tries.push_back(c);
    for (int zero = layout.zero + 1; zero <= top_zero; ++zero) {
      c.zero = zero;
      tries.push_back(c);
    }
  }
  for (const ParallelLayout& c : tries) {
    if (fits(c)) return c;
  }
  // More replicas: each holds a smaller share of the batch and, sharded, of
  // the state. Doubling keeps the search short and the batch divisible.
  const int limit = max_gpus > 0 ? max_gpus : kMaxSuggestedGpus;
  for (int64_t data = int64_t{layout.data} * 2;
       data * layout.tensor * layout.pipeline <= limit; data *= 2) {
    ParallelLayout c = layout;
    c.data = static_cast<int>(data);
    for (bool checkpoint : {layout.activation_checkpointing, true}) {
      c.activation_checkpointing = checkpoint;
      c.zero = std::max(layout.zero, top_zero);
      if (layout.framework == Framework::kDeepspeed && layout.pipeline > 1) {
        c.zero = std::max(layout.zero, 1);
      }
      if (fits(c)) return c;
    }
  }
  return std::nullopt;
}

std::string DescribeChange(const ParallelLayout& from, const ParallelLayout& to) {
  std::vector<std::string> flags;
  if (to.data != from.data) flags.push_back(absl::StrCat("--data-parallel ", to.data));
  if (to.tensor != from.tensor) flags.push_back(absl::StrCat("--tensor-parallel ", to.tensor));
  if (to.pipeline != from.pipeline) {
    flags.push_back(absl::StrCat("--pipeline-parallel ", to.pipeline));
  }
  if (to.zero != from.zero) flags.push_back(absl::StrCat("--zero ", to.zero));
  if (to.activation_checkpointing && !from.activation_checkpointing) {
    flags.push_back("--activation-checkpointing");
  }
  std::string out = absl::StrJoin(flags, " ");
  if (to.gpus() > from.gpus()) {
    absl::StrAppend(&out, " (", to.gpus() - from.gpus(), " more GPUs)");
  }
  return out;
}

absl::Status CheckLayoutFits(const MemoryModel& model, const models::WorkloadSpec& spec,
                             const models::GpuSpec& gpu, const ParallelLayout& layout,
                             const LayoutMemory& memory, int max_gpus) {
  const double device = gpu.memory_gib * kGiB;
  if (device <= 0 || memory.required() <= device) return absl::OkStatus();
  std::vector<std::string> parts = {absl::StrCat("parameters ", Gib(memory.parameters)),
                                    absl::StrCat("gradients ", Gib(memory.gradients)),
                                    absl::StrCat("optimizer ", Gib(memory.optimizer))};
  if (memory.amp_copies > 0) parts.push_back(absl::StrCat("16-bit copies ", Gib(memory.amp_copies)));
  if (memory.gathered > 0) parts.push_back(absl::StrCat("gathered layers ", Gib(memory.gathered)));
  if (memory.buckets > 0) parts.push_back(absl::StrCat("buckets ", Gib(memory.buckets)));
  parts.push_back(absl::StrCat("activations ", Gib(memory.activations)));
  parts.push_back(absl::StrCat("allocator slack and CUDA context ",
                               Gib(memory.slack + memory.context)));
  std::string message = absl::StrCat(
      DescribeLayout(layout), " does not fit: needs ", Gib(memory.required()),
      " GiB per GPU (", absl::StrJoin(parts, ", "), " GiB), ", gpu.model, " has ", Gib(device),
      " GiB");
  if (std::optional<ParallelLayout> nearest =
          NearestFittingLayout(model, spec, gpu, layout, max_gpus)) {
    absl::StrAppend(&message, "; fits with ", DescribeChange(layout, *nearest));
  } else {
    absl::StrAppend(&message, "; no layout tried fits (more ZeRO, activation checkpointing, ",
                    max_gpus > 0 ? absl::StrCat("up to ", max_gpus) : std::string("more"),
                    " GPUs)");
  }
  return absl::FailedPreconditionError(message);
}

}  // namespace perfcast::predictor

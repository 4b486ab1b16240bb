#include "predictor/parallel.h"

#include <algorithm>
#include <array>
#include <memory>
#include <utility>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/architecture.h"
#include "models/descriptor.h"
#include "models/iteration_builder.h"
#include "predictor/memory.h"
#include "predictor/pricing_plan.h"
#include "predictor/profile_rates.h"
#include "predictor/python_loop.h"

namespace perfcast::predictor {
namespace {

constexpr int kOpClasses = static_cast<int>(models::OpClass::kSoftmax) + 1;

// Per micro-batch totals of one pipeline stage.
struct Stage {
  std::array<double, kOpClasses> class_ms{};  // compute by operation class
  std::array<bool, kOpClasses> has_class{};   // classes the stage runs
  std::array<double, kOpClasses> outside_ms{};  // of class_ms: outside the layers
  double compute_ms = 0;
  double backward_ms = 0;
  double recompute_ms = 0;  // forward run again in backward (part of compute_ms)
  double launches = 0;
  int64_t layers = 0;
  double tp_collectives = 0;  // tensor-parallel all-reduces per micro-batch
  double tp_ms = 0;
  double pp_ms = 0;
  double total() const { return compute_ms + tp_ms + pp_ms; }
};

// Megatron's vocabulary-parallel cross-entropy as it runs
// (tensor_parallel/cross_entropy.py), in place of PyTorch's fused
// log_softmax + nll_loss: the 16-bit logits copied to fp32, then max,
// subtract, exp, sum and divide over them as separate kernels, the softmax
// kept for backward, which scales it in place and casts it back to 16 bits;
// the target masks and gathers move little but are launched too.
void DescribeMegatronCrossEntropy(models::Precision precision, models::Operation& op) {
  auto numel = op.shape.find("numel");
  if (numel == op.shape.end()) return;
  const bool half_logits =
      precision == models::Precision::kFp16Amp || precision == models::Precision::kBf16Amp;
  const double n = static_cast<double>(numel->second);
  const double cast = half_logits ? 2 + 4 : 0;  // read 16-bit, write fp32
  if (IsBackwardOperation(op.name)) {
    op.bytes = n * (8 + cast);  // mul_ in place, then the cast back
    op.launches = 6 + (half_logits ? 1 : 0);
  } else {
    // max (read), subtract (read, write), exp_ (read, write), sum (read),
    // div_ (read, write)
    op.bytes = n * (4 + 8 + 8 + 4 + 8 + cast);
    op.launches = 17 + (half_logits ? 1 : 0);
  }
}

}  // namespace

// One micro-batch size: the whole model described and priced on one GPU.
struct ParallelPlan::MicroBatch {
  absl::Status status;  // why it cannot be priced; the fields below are set when ok
  models::WorkloadSpec spec;
  models::WorkloadDescriptor full;
  Prediction prediction;
  double scale = 1;  // level 2's correction of the whole model, spread evenly over its parts
  bool has_lm_head = false;
  int64_t layer_count = 0;
  LayoutMemoryInputs memory;
  // By tensor-parallel degree and the framework that runs it.
  absl::flat_hash_map<std::pair<int, Framework>, std::unique_ptr<Shard>> shards;
};

// What one GPU of a tensor-parallel group computes of a micro-batch: every
// operation's share re-priced at level 1 and scaled by level 2, with what
// placing it on a pipeline stage reads.
struct ParallelPlan::Shard {
  struct Op {
    double ms = 0;
    double launches = 0;  // count × launches per call
    models::OpClass op_class = models::OpClass::kGemm;
    int64_t layer = -1;        // -1: outside the layers
    bool after_layers = false; // outside the layers, after the first one
    bool backward = false;
  };
  absl::Status status;
  std::vector<Op> ops;
};

ParallelPlan::ParallelPlan(const PredictorModel& model, const models::WorkloadSpec& spec,
                           const models::Node& node, ParallelOptions options)
    : model_(model),
      raw_spec_(spec),
      spec_(models::NormalizeSpec(spec)),
      node_(node),
      options_(std::move(options)),
      single_(model, node),
      level1_(model),
      rates_(ResolveRates(WithProfileRates(node, model.profile_rates), model.efficiencies)) {}

ParallelPlan::~ParallelPlan() = default;

ParallelPlan::MicroBatch& ParallelPlan::MicroBatchOf(int64_t batch) {
  std::unique_ptr<MicroBatch>& slot = micro_batches_[batch];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<MicroBatch>();
  MicroBatch& micro = *slot;
  micro.spec = *spec_;
  micro.spec.batch_size = batch;
  absl::StatusOr<models::WorkloadDescriptor> full = models::Describe(micro.spec);
  if (!full.ok()) {
    micro.status = full.status();
    return micro;
  }
  micro.full = *std::move(full);
  micro.full.implementation = options_.implementation;
  absl::StatusOr<Prediction> predicted = single_.Predict(micro.full);
  if (!predicted.ok()) {
    micro.status = predicted.status();
    return micro;
  }
  micro.prediction = *std::move(predicted);
  const double level1_total = micro.prediction.level1_ms;
  micro.scale = level1_total > 0 ? micro.prediction.iteration_ms / level1_total : 1.0;
  for (const models::Operation& op : micro.full.operations) {
    micro.has_lm_head |= absl::StartsWith(op.name, "lm_head");
    if (std::optional<int64_t> l = OperationLayer(op.name)) {
      micro.layer_count = std::max(micro.layer_count, *l + 1);
    }
  }
  micro.memory = PrepareLayoutMemory(model_.memory, micro.full);
  return micro;
}

const ParallelPlan::Shard& ParallelPlan::ShardOf(MicroBatch& micro, int tensor,
                                                 Framework framework) {
  std::unique_ptr<Shard>& slot = micro.shards[{tensor, framework}];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<Shard>();
  Shard& out = *slot;
  // The per-GPU share of every operation, re-priced at level 1.
  models::WorkloadDescriptor shard = micro.full;
  for (models::Operation& op : shard.operations) {
    if (framework == Framework::kMegatron && micro.has_lm_head &&
        absl::StartsWith(op.name, "loss.cross_entropy")) {
      DescribeMegatronCrossEntropy(micro.spec.precision, op);
    }
    if (tensor == 1 || !TensorParallelSplits(op.name, micro.has_lm_head, framework)) continue;
    op.flops /= tensor;
    op.bytes /= tensor;
    op.work_items = std::max(1.0, op.work_items / tensor);
    // An attention record's shape says its heads, and a model without an
    // attention class prices it from that shape (as its batched GEMMs and
    // softmax): each GPU holds heads / T of them.
    if (auto heads = op.shape.find("heads"); heads != op.shape.end()) heads->second /= tensor;
  }
  // PredictOperationTimes(model_, shard, node_), with its plan and rates kept.
  absl::StatusOr<std::vector<double>> times =
      rates_.ok() ? level1_.RecordTimes(PreparedWorkload(shard), *rates_)
                  : absl::StatusOr<std::vector<double>>(rates_.status());
  if (!times.ok()) {
    out.status = times.status();
    return out;
  }
  out.ops.reserve(shard.operations.size());
  bool seen_layer = false;
  for (size_t i = 0; i < shard.operations.size(); ++i) {
    const models::Operation& op = shard.operations[i];
    Shard::Op& o = out.ops.emplace_back();
    o.ms = micro.scale * (*times)[i];
    o.launches = op.count * op.launches;
    o.op_class = op.op_class;
    o.backward = IsBackwardOperation(op.name);
    if (op.op_class == models::OpClass::kOptimizer ||
        op.op_class == models::OpClass::kHostOverhead) {
      continue;
    }
    o.after_layers = seen_layer;
    if (std::optional<int64_t> l = OperationLayer(op.name)) {
      seen_layer = true;
      o.layer = *l;
    }
  }
  return out;
}

absl::StatusOr<LayoutMemory> ParallelPlan::Memory(const ParallelLayout& layout) {
  RETURN_IF_ERROR(spec_.status());
  const MicroBatch& micro = MicroBatchOf(std::max<int64_t>(
      1, spec_->batch_size / (int64_t{layout.data} * layout.micro_batches)));
  RETURN_IF_ERROR(micro.status);
  return EstimateLayoutMemory(micro.memory, layout);
}

absl::StatusOr<ParallelPrediction> ParallelPlan::Predict(const ParallelLayout& layout) {
  if (!spec_.ok()) return ValidateLayout(raw_spec_, layout, options_.max_gpus);
  RETURN_IF_ERROR(ValidateNormalizedLayout(*spec_, layout, options_.max_gpus));
  const models::WorkloadSpec* spec = &*spec_;
  const bool training = spec->phase == models::Phase::kTrain;
  const int n = layout.data, t = layout.tensor, p = layout.pipeline, m = layout.micro_batches;

  MicroBatch& micro = MicroBatchOf(spec->batch_size / (int64_t{n} * m));
  RETURN_IF_ERROR(micro.status);
  const models::WorkloadSpec& micro_spec = micro.spec;
  const models::WorkloadDescriptor* full = &micro.full;
  const Prediction* predicted = &micro.prediction;

  ParallelPrediction out;
  out.layout = layout;
  out.micro_batch = *predicted;
  const bool has_lm_head = micro.has_lm_head;
  const int64_t layer_count = micro.layer_count;
  const Shard& shard = ShardOf(micro, t, layout.framework);
  RETURN_IF_ERROR(shard.status);

  // Stages: contiguous runs of layers; embeddings before the first layer on
  // stage 0, everything after the last on stage P-1.
  std::vector<Stage> stages(p);
  for (int64_t l = 0; l < layer_count; ++l) ++stages[l * p / std::max<int64_t>(1, layer_count)].layers;
  double optimizer_level1 = 0, host_level1 = 0, total_launches = 0;
  const bool recompute = training && layout.activation_checkpointing;
  const ImplementationTerm term =
      (options_.terms != nullptr ? *options_.terms : ParallelTerms::BuiltIn()).Find(layout);
  const double outside_scale = term.OutsideLayersScale(spec->precision);
  for (const Shard::Op& op : shard.ops) {
    const bool outside = op.layer < 0 && op.op_class != models::OpClass::kHostToDevice &&
                         op.op_class != models::OpClass::kOptimizer &&
                         op.op_class != models::OpClass::kHostOverhead;
    const double ms = op.ms * term.ClassScale(op.op_class, spec->precision) *
                      (outside ? outside_scale : 1);
    total_launches += op.launches;
    if (op.op_class == models::OpClass::kOptimizer) {
      optimizer_level1 += ms;
      continue;
    }
    if (op.op_class == models::OpClass::kHostOverhead) {
      host_level1 += ms;
      continue;
    }
    int s = op.after_layers ? p - 1 : 0;
    if (op.layer >= 0) s = static_cast<int>(op.layer * p / layer_count);
    if (op.op_class == models::OpClass::kHostToDevice) s = 0;
    Stage& stage = stages[s];
    // Checkpointing runs each layer's forward again in backward.
    const double rerun = recompute && !op.backward && op.layer >= 0 ? ms : 0;
    const int c = static_cast<int>(op.op_class);
    stage.class_ms[c] += ms + rerun;
    if (outside) stage.outside_ms[c] += ms;
    stage.has_class[c] = true;
    stage.compute_ms += ms + rerun;
    stage.recompute_ms += rerun;
    if (op.backward) stage.backward_ms += ms;
    stage.backward_ms += rerun;
    stage.launches += op.launches * (rerun > 0 ? 2 : 1);
  }
  // Host dispatch is per kernel: each stage pays its share of the launches.
  constexpr int kHost = static_cast<int>(models::OpClass::kHostOverhead);
  for (Stage& stage : stages) {
    const double host = total_launches > 0 ? host_level1 * stage.launches / total_launches
                                           : host_level1 / p;
    stage.class_ms[kHost] += host;
    stage.has_class[kHost] = true;
    stage.compute_ms += host;
  }

  // Links, with ranks placed tensor-innermost, then data, then pipeline.
  const models::Node& node = node_;
  const ParallelOptions& options = options_;
  const int per_node = options.gpus_per_node > 0 ? options.gpus_per_node
                                                 : std::max(8, node.gpu.nvlink_gpus);
  auto link_for = [&](int group, bool cross_node) -> absl::StatusOr<Link> {
    if (!cross_node && options.measured_link.has_value()) return *options.measured_link;
    return SpecLink(node.gpu, std::min(group, per_node), cross_node);
  };
  const double act_bytes = static_cast<double>(micro_spec.batch_size) *
                           static_cast<double>(models::Param(micro_spec, "seq_len")) *
                           static_cast<double>(models::Param(micro_spec, "hidden")) *
                           models::ElementBytes(spec->precision);
  if (t > 1) {
    absl::StatusOr<Link> link = link_for(t, t > per_node);
    if (!link.ok()) return link.status();
    out.tp_link = *link;
    absl::StatusOr<double> one = CollectiveSeconds(
        Collective::kAllReduce, CollectiveAlgorithm::kAuto, act_bytes, t, *link);
    if (!one.ok()) return one.status();
    // Two per layer forward, two backward, and two more where checkpointing
    // runs the layer's forward again.
    const int per_layer = training ? (recompute ? 6 : 4) : 2;
    for (Stage& stage : stages) {
      stage.tp_collectives = static_cast<double>(stage.layers) * per_layer;
    }
    // A vocabulary-parallel embedding and head reduce across the group; a
    // whole one on every GPU does not.
    if (layout.framework != Framework::kPytorch) {
      if (micro_spec.params.contains("vocab")) stages[0].tp_collectives += 1;
      if (has_lm_head && training) stages[p - 1].tp_collectives += 1;
    }
    for (Stage& stage : stages) stage.tp_ms = stage.tp_collectives * *one * 1e3;
  }
  if (p > 1) {
    absl::StatusOr<Link> link = link_for(2, int64_t{n} * t * p > per_node);
    if (!link.ok()) return link.status();
    out.pp_link = *link;
    absl::StatusOr<double> send = CollectiveSeconds(
        Collective::kPointToPoint, CollectiveAlgorithm::kAuto, act_bytes, 2, *link);
    if (!send.ok()) return send.status();
    for (int s = 0; s < p; ++s) {
      const int sends = (s < p - 1 ? 1 : 0) + (training && s > 0 ? 1 : 0);
      stages[s].pp_ms = sends * *send * 1e3;
    }
  }

  // 1F1B over the stages.
  int slowest = 0;
  double sum_stage = 0;
  for (int s = 0; s < p; ++s) {
    sum_stage += stages[s].total();
    if (stages[s].total() > stages[slowest].total()) slowest = s;
  }
  const Stage& critical = stages[slowest];
  out.compute_ms = m * critical.compute_ms;
  out.recompute_ms = m * critical.recompute_ms;
  out.tp_comm_ms = m * critical.tp_ms;
  out.pp_comm_ms = m * critical.pp_ms;
  out.bubble_ms = sum_stage - critical.total();
  // ZeRO (any stage) shards the optimizer states: each replica updates its
  // 1 / N of the parameters.
  const int optimizer_shards = layout.zero >= 1 ? n : 1;
  out.optimizer_ms =
      training ? optimizer_level1 / (int64_t{t} * p * optimizer_shards) : 0;

  const double parameters_per_gpu = full->parameters / (int64_t{t} * p);
  const double weight_bytes = spec->precision == models::Precision::kFp64 ? 8 : 4;
  if (training && n > 1) {
    absl::StatusOr<Link> link = link_for(n, int64_t{n} * t > per_node);
    if (!link.ok()) return link.status();
    out.dp_link = *link;
    absl::StatusOr<OverlapResult> overlap =
        OverlappedAllReduce(parameters_per_gpu * weight_bytes, n, *link,
                            critical.backward_ms / 1e3, options.bucket_bytes);
    if (!overlap.ok()) return overlap.status();
    out.dp_comm_ms = overlap->comm_seconds * 1e3;
    out.dp_exposed_ms = overlap->exposed_seconds * 1e3;
    out.dp_buckets = overlap->buckets;
  }
  out.step_ms = out.compute_ms + out.bubble_ms + out.tp_comm_ms + out.pp_comm_ms +
                out.dp_exposed_ms + out.optimizer_ms;
  out.launches = m * critical.launches;
  out.units = critical.layers > 0 ? critical.layers : full->inner_modules;
  // Each of the M + P - 1 slots of 1F1B waits for the slowest stage, so its
  // host dispatch and its collectives pace the fill and drain as well.
  const int slots = m + p - 1;
  const double per_tp_collective =
      term.tp_collective_ms + term.tp_collective_ms_per_peer * (t - 1);
  const double per_host_tp_collective =
      term.host_ms_per_tp_collective + term.host_ms_per_tp_collective_per_peer * (t - 1);
  // The host terms in the node's Python units: its per-op cost, as the
  // single-GPU loop prices it, and the model's dispatch weight.
  const PythonLoopTerms& loop = FittedPythonLoopTerms();
  out.python_op_us = single_.python_host_cost().per_op_us;
  out.python_ms_per_launch =
      (training ? loop.ops_per_launch_train : loop.ops_per_launch_inference) *
      out.python_op_us / 1e3;
  out.dispatch_scale =
      micro.full.implementation.heavy_python_dispatch ? loop.heavy_dispatch_host_scale : 1;
  const double per_launch =
      term.host_ms_per_launch +
      out.python_ms_per_launch * (term.host_loop_scale * out.dispatch_scale + term.host_hook_scale);
  const double host =
      slots * (critical.launches * per_launch + term.host_ms_per_micro_batch +
               critical.tp_collectives * per_host_tp_collective) +
      out.units *
          (term.host_ms_per_unit + CollectiveCallsPerUnit(layout) * term.host_ms_per_collective);
  const double bound = std::max(
      (out.step_ms + slots * critical.tp_collectives * per_tp_collective) * (1 + term.gpu_scale) +
          term.dp_comm_contention * out.dp_comm_ms,
      host);
  out.implementation_ms = bound - out.step_ms;
  out.step_ms = bound;
  for (int c = 0; c < kOpClasses; ++c) {
    if (!critical.has_class[c]) continue;
    const std::string name(models::OpClassName(static_cast<models::OpClass>(c)));
    out.breakdown_ms[name] += m * critical.class_ms[c];
    if (critical.outside_ms[c] > 0) out.outside_layers_ms[name] = m * critical.outside_ms[c];
  }
  for (int s = 0; s < p; ++s) {
    if (s == slowest) continue;
    for (double ms : stages[s].outside_ms) out.outside_layers_bubble_ms += ms;
  }
  if (out.optimizer_ms > 0) {
    out.breakdown_ms[std::string(models::OpClassName(models::OpClass::kOptimizer))] +=
        out.optimizer_ms;
  }
  if (out.tp_comm_ms > 0) out.breakdown_ms["comm.tp_allreduce"] = out.tp_comm_ms;
  if (out.pp_comm_ms > 0) out.breakdown_ms["comm.pp_p2p"] = out.pp_comm_ms;
  if (out.dp_exposed_ms > 0) out.breakdown_ms["comm.dp_allreduce"] = out.dp_exposed_ms;
  if (out.bubble_ms > 0) out.breakdown_ms["pipeline_bubble"] = out.bubble_ms;
  if (out.implementation_ms > 0) {
    out.breakdown_ms[absl::StrCat("framework.", ImplementationStrategy(layout))] =
        out.implementation_ms;
  }
  const double uncertain =
      out.compute_ms + out.bubble_ms + out.optimizer_ms + out.implementation_ms;
  const double band = term.interval_scale > 0 ? term.interval_scale : 1;
  out.lo_ms = out.step_ms -
              band * uncertain * (1 - predicted->lo_ms / predicted->iteration_ms);
  out.hi_ms = out.step_ms +
              band * uncertain * (predicted->hi_ms / predicted->iteration_ms - 1);

  out.memory = EstimateLayoutMemory(micro.memory, layout);
  return out;
}

absl::StatusOr<ParallelPrediction> PredictParallel(const PredictorModel& model,
                                                   const models::WorkloadSpec& spec,
                                                   const models::Node& node,
                                                   const ParallelLayout& layout,
                                                   const ParallelOptions& options) {
  return ParallelPlan(model, spec, node, options).Predict(layout);
}

Prediction AsPrediction(const ParallelPrediction& parallel) {
  Prediction p = parallel.micro_batch;
  p.iteration_ms = parallel.step_ms;
  p.lo_ms = parallel.lo_ms;
  p.hi_ms = parallel.hi_ms;
  p.breakdown_ms = parallel.breakdown_ms;
  return p;
}

std::string DescribeLink(const Link& link) {
  if (link.source.empty()) return "";
  return absl::StrCat(link.source, " ", absl::SixDigits(link.bus_gbs), " GB/s, ",
                      absl::SixDigits(link.latency_us), " us");
}

}  // namespace perfcast::predictor

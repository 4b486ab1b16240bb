#include "predictor/parallel.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "models/descriptor.h"
#include "models/iteration_builder.h"
#include "predictor/memory.h"
#include "predictor/pricing_plan.h"

namespace perfcast::predictor {
namespace {

std::optional<int64_t> SpecParam(const models::WorkloadSpec& spec, const char* name) {
  auto it = spec.params.find(name);
  if (it == spec.params.end()) return std::nullopt;
  return it->second;
}


// Per micro-batch totals of one pipeline stage.
struct Stage {
  std::map<std::string, double> class_ms;  // compute by operation class
  double compute_ms = 0;
  double backward_ms = 0;
  double recompute_ms = 0;  // forward run again in backward (part of compute_ms)
  double launches = 0;
  int64_t layers = 0;
  double tp_ms = 0;
  double pp_ms = 0;
  double total() const { return compute_ms + tp_ms + pp_ms; }
};

}  // namespace

absl::StatusOr<ParallelPrediction> PredictParallel(const PredictorModel& model,
                                                   const models::WorkloadSpec& raw_spec,
                                                   const models::Node& node,
                                                   const ParallelLayout& layout,
                                                   const ParallelOptions& options) {
  if (absl::Status s = ValidateLayout(raw_spec, layout, options.max_gpus); !s.ok()) return s;
  absl::StatusOr<models::WorkloadSpec> spec = models::NormalizeSpec(raw_spec);
  if (!spec.ok()) return spec.status();
  const bool training = spec->phase == models::Phase::kTrain;
  const int n = layout.data, t = layout.tensor, p = layout.pipeline, m = layout.micro_batches;

  models::WorkloadSpec micro_spec = *spec;
  micro_spec.batch_size = spec->batch_size / (int64_t{n} * m);
  absl::StatusOr<models::WorkloadDescriptor> full = models::Describe(micro_spec);
  if (!full.ok()) return full.status();

  ParallelPrediction out;
  out.layout = layout;
  absl::StatusOr<Prediction> micro = PricingPlan(model, node).Predict(*full);
  if (!micro.ok()) return micro.status();
  out.micro_batch = *micro;
  const double level1_total = micro->level1_ms;
  // Level 2's correction of the whole model, spread evenly over its parts.
  const double scale = level1_total > 0 ? micro->iteration_ms / level1_total : 1.0;

  // The per-GPU share of every operation, re-priced at level 1.
  bool has_lm_head = false;
  int64_t layer_count = 0;
  for (const models::Operation& op : full->operations) {
    has_lm_head |= absl::StartsWith(op.name, "lm_head");
    if (std::optional<int64_t> l = OperationLayer(op.name)) layer_count = std::max(layer_count, *l + 1);
  }
  models::WorkloadDescriptor shard = *full;
  for (models::Operation& op : shard.operations) {
    if (t == 1 || !TensorParallelSplits(op.name, has_lm_head)) continue;
    op.flops /= t;
    op.bytes /= t;
    op.work_items = std::max(1.0, op.work_items / t);
    // An attention record's shape says its heads, and a model without an
    // attention class prices it from that shape (as its batched GEMMs and
    // softmax): each GPU holds heads / T of them.
    if (auto heads = op.shape.find("heads"); heads != op.shape.end()) heads->second /= t;
  }
  absl::StatusOr<std::vector<double>> times = PredictOperationTimes(model, shard, node);
  if (!times.ok()) return times.status();

  // Stages: contiguous runs of layers; embeddings before the first layer on
  // stage 0, everything after the last on stage P-1.
  std::vector<Stage> stages(p);
  for (int64_t l = 0; l < layer_count; ++l) ++stages[l * p / std::max<int64_t>(1, layer_count)].layers;
  double optimizer_level1 = 0, host_level1 = 0, total_launches = 0;
  bool seen_layer = false;
  const bool recompute = training && layout.activation_checkpointing;
  for (size_t i = 0; i < shard.operations.size(); ++i) {
    const models::Operation& op = shard.operations[i];
    const double ms = scale * (*times)[i];
    total_launches += op.count * op.launches;
    if (op.op_class == models::OpClass::kOptimizer) {
      optimizer_level1 += ms;
      continue;
    }
    if (op.op_class == models::OpClass::kHostOverhead) {
      host_level1 += ms;
      continue;
    }
    int s = seen_layer ? p - 1 : 0;
    if (std::optional<int64_t> l = OperationLayer(op.name)) {
      seen_layer = true;
      s = static_cast<int>(*l * p / layer_count);
    }
    if (op.op_class == models::OpClass::kHostToDevice) s = 0;
    Stage& stage = stages[s];
    // Checkpointing runs each layer's forward again in backward.
    const bool backward = IsBackwardOperation(op.name);
    const double rerun = recompute && !backward && OperationLayer(op.name).has_value() ? ms : 0;
    stage.class_ms[std::string(models::OpClassName(op.op_class))] += ms + rerun;
    stage.compute_ms += ms + rerun;
    stage.recompute_ms += rerun;
    if (backward) stage.backward_ms += ms;
    stage.backward_ms += rerun;
    stage.launches += op.count * op.launches * (rerun > 0 ? 2 : 1);
  }
  // Host dispatch is per kernel: each stage pays its share of the launches.
  for (Stage& stage : stages) {
    const double host = total_launches > 0 ? host_level1 * stage.launches / total_launches
                                           : host_level1 / p;
    stage.class_ms[std::string(models::OpClassName(models::OpClass::kHostOverhead))] += host;
    stage.compute_ms += host;
  }

  // Links, with ranks placed tensor-innermost, then data, then pipeline.
  const int per_node = options.gpus_per_node > 0 ? options.gpus_per_node
                                                 : std::max(8, node.gpu.nvlink_gpus);
  auto link_for = [&](int group, bool cross_node) -> absl::StatusOr<Link> {
    if (!cross_node && options.measured_link.has_value()) return *options.measured_link;
    return SpecLink(node.gpu, std::min(group, per_node), cross_node);
  };
  const double act_bytes = static_cast<double>(micro_spec.batch_size) *
                           static_cast<double>(SpecParam(micro_spec, "seq_len").value_or(0)) *
                           static_cast<double>(SpecParam(micro_spec, "hidden").value_or(0)) *
                           models::ElementBytes(spec->precision);
  if (t > 1) {
    absl::StatusOr<Link> link = link_for(t, t > per_node);
    if (!link.ok()) return link.status();
    out.tp_link = *link;
    absl::StatusOr<double> one = CollectiveSeconds(
        Collective::kAllReduce, CollectiveAlgorithm::kAuto, act_bytes, t, *link);
    if (!one.ok()) return one.status();
    const double per_layer = (training ? 4 : 2) * *one * 1e3;
    for (int s = 0; s < p; ++s) stages[s].tp_ms = stages[s].layers * per_layer;
    if (SpecParam(micro_spec, "vocab").has_value()) stages[0].tp_ms += *one * 1e3;
    if (has_lm_head && training) stages[p - 1].tp_ms += *one * 1e3;
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
  out.optimizer_ms = training ? optimizer_level1 / (int64_t{t} * p) : 0;

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
  const ImplementationTerm term =
      (options.terms != nullptr ? *options.terms : ParallelTerms::BuiltIn()).Find(layout);
  out.launches = m * critical.launches;
  out.units = critical.layers > 0 ? critical.layers : full->inner_modules;
  const double host = out.launches * term.host_ms_per_launch + out.units * term.host_ms_per_unit;
  const double bound = std::max(out.step_ms * (1 + term.gpu_scale), host);
  out.implementation_ms = bound - out.step_ms;
  out.step_ms = bound;
  for (const auto& [op_class, ms] : critical.class_ms) out.breakdown_ms[op_class] += m * ms;
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
  const double certain = out.step_ms - uncertain;
  out.lo_ms = certain + uncertain * micro->lo_ms / micro->iteration_ms;
  out.hi_ms = certain + uncertain * micro->hi_ms / micro->iteration_ms;

  out.memory = EstimateLayoutMemory(model.memory, *full, layout);
  return out;
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

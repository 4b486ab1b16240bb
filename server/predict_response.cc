#include "server/predict_response.h"

#include <string>

#include "predictor/predictor.h"
#include "predictor/rates.h"
#include "proto/convert.h"

namespace perfcast::server {

namespace {

absl::string_view SeenName(predictor::Seen seen) {
  switch (seen) {
    case predictor::Seen::kSeen:
      return "seen";
    case predictor::Seen::kNew:
      return "new";
    case predictor::Seen::kUnknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace

void EncodeDistance(const predictor::Distance& d, v1::Distance* out) {
  out->set_architecture(d.architecture);
  out->set_architecture_seen(std::string(SeenName(d.architecture_seen)));
  out->set_vendor(d.vendor);
  out->set_vendor_seen(std::string(SeenName(d.vendor_seen)));
  out->set_power_class(d.power_class);
  out->set_power_class_seen(std::string(SeenName(d.power_class_seen)));
  out->set_precision_path(d.precision_path);
  out->set_precision_path_seen(std::string(SeenName(d.precision_path_seen)));
  for (const std::string& component : d.unlearned) out->add_unlearned(component);
  out->set_summary(d.Summary());
}

void EncodePrice(const serving::Price& price, bool brief, v1::PredictResponse* out) {
  const predictor::Prediction& p = price.prediction;
  out->set_iteration_ms(p.iteration_ms);
  out->set_iteration_ms_low(p.lo_ms);
  out->set_iteration_ms_high(p.hi_ms);
  out->set_model_id(price.model->meta.id);
  out->set_model_version(price.model->meta.version);
  out->set_level(predictor::MethodLevel(p.method));
  if (brief) return;
  double total = 0;
  for (const auto& [op_class, ms] : p.breakdown_ms) total += ms;
  out->mutable_breakdown()->Reserve(static_cast<int>(p.breakdown_ms.size()));
  for (const auto& [op_class, ms] : p.breakdown_ms) {
    v1::OperationEstimate* op = out->add_breakdown();
    op->set_op_class(op_class);
    op->set_ms(ms);
    op->set_share(total > 0 ? ms / total : 0);
  }
  out->set_rate_source(std::string(predictor::RateSourceName(p.rate_source)));
  EncodeDistance(p.distance, out->mutable_distance());
  out->set_gpu_model(price.node->gpu.model);
  out->set_cv_mape(price.cv_mape);
  out->set_method(std::string(predictor::MethodName(p.method, p.calibrated)));
  out->set_level1_ms(p.level1_ms);
  out->set_breakdown_scale(p.breakdown_scale);
  out->set_host_ms(p.host_ms);
  // What was predicted: a Hugging Face config or torchvision name resolved.
  proto::ToProto(price.workload, out->mutable_workload());
  if (price.parallel.has_value()) EncodeParallel(*price.parallel, out->mutable_parallel());
  EncodeMemory(price.memory, price.memory_verdict, out->mutable_memory());
  if (price.loop.has_value()) {
    EncodeLoop(p, price.host_work, out->mutable_loop());
    out->mutable_workload()->set_loop(proto::ToProto(*price.loop));
  }
  for (const std::string& label : p.features_used) out->add_features(label);
  for (const std::string& label : p.extrapolated) out->add_extrapolated_features(label);
  for (const std::string& op_class : p.uncalibrated_classes) {
    out->add_uncalibrated_classes(op_class);
  }
  for (const std::string& note : price.notes) out->add_notes(note);
}

void EncodeAnswer(const serving::Answer& answer, bool brief, v1::PredictResponse* out) {
  EncodePrice(*answer.price, brief, out);
  EncodeJob(answer.job, out);
}

void EncodeLoop(const predictor::Prediction& p, const predictor::HostWork& work,
                v1::LoopEstimate* out) {
  out->set_loop(proto::ToProto(p.loop));
  out->set_kernel_launches(work.launches);
  out->set_python_calls(work.python_calls);
  if (p.loop != models::Loop::kPython) {
    out->set_cpp_ms(p.iteration_ms);
    return;
  }
  out->set_cpp_ms(p.python.cpp_ms);
  out->set_host_ms(p.python.step.host_ms);
  out->set_per_op_us(p.python.cost.per_op_us);
  out->set_per_op_source(std::string(predictor::HostCostSourceName(p.python.cost.source)));
  out->set_per_op_node(p.python.cost.probed_on);
  out->set_per_op_nodes(p.python.cost.probed_nodes);
  out->set_host_bound(p.python.step.host_bound);
}

void EncodeParallel(const predictor::ParallelPrediction& p, v1::ParallelEstimate* out) {
  out->set_gpus(p.layout.gpus());
  out->set_compute_ms(p.compute_ms);
  out->set_bubble_ms(p.bubble_ms);
  out->set_tp_comm_ms(p.tp_comm_ms);
  out->set_pp_comm_ms(p.pp_comm_ms);
  out->set_dp_exposed_ms(p.dp_exposed_ms);
  out->set_optimizer_ms(p.optimizer_ms);
  out->set_dp_comm_ms(p.dp_comm_ms);
  out->set_dp_buckets(p.dp_buckets);
  out->set_micro_batch_ms(p.micro_batch.iteration_ms);
  out->set_memory_parameters_bytes(p.memory.parameters);
  out->set_memory_gradients_bytes(p.memory.gradients);
  out->set_memory_optimizer_bytes(p.memory.optimizer);
  out->set_memory_activations_bytes(p.memory.activations);
  out->set_memory_total_bytes(p.memory.allocated());
  out->set_memory_amp_copies_bytes(p.memory.amp_copies);
  out->set_memory_gathered_bytes(p.memory.gathered);
  out->set_memory_buckets_bytes(p.memory.buckets);
  out->set_memory_required_bytes(p.memory.required());
  out->set_recompute_ms(p.recompute_ms);
  out->set_layout(predictor::DescribeLayout(p.layout));
  out->set_implementation_ms(p.implementation_ms);
  out->set_launches(p.launches);
  out->set_units(p.units);
  out->set_python_op_us(p.python_op_us);
  out->set_python_ms_per_launch(p.python_ms_per_launch);
  out->set_dispatch_scale(p.dispatch_scale);
  for (const auto& [op_class, ms] : p.outside_layers_ms) {
    (*out->mutable_outside_layers_ms())[op_class] = ms;
  }
  out->set_outside_layers_bubble_ms(p.outside_layers_bubble_ms);
  out->set_tp_link(predictor::DescribeLink(p.tp_link));
  out->set_dp_link(predictor::DescribeLink(p.dp_link));
  out->set_pp_link(predictor::DescribeLink(p.pp_link));
}

void EncodeMemory(const predictor::MemoryEstimate& e, const predictor::MemoryVerdict& v,
                  v1::MemoryEstimate* out) {
  out->set_peak_bytes(e.peak_bytes);
  out->set_peak_bytes_low(e.low_bytes);
  out->set_peak_bytes_high(e.high_bytes);
  out->set_required_bytes(e.required_bytes);
  out->set_device_bytes(v.device_bytes);
  out->set_fits(v.fits);
  out->set_method(e.method);
  out->set_persistent_bytes(e.terms.persistent());
  out->set_activation_bytes(e.terms.transient());
}

void EncodeJob(const predictor::JobEstimate& job, v1::PredictResponse* out) {
  out->set_iterations(job.iterations);
  out->set_job_seconds(job.seconds);
  out->set_job_seconds_low(job.lo_seconds);
  out->set_job_seconds_high(job.hi_seconds);
}

}  // namespace perfcast::server

#include "server/predict_response.h"

#include <cstdint>
#include <type_traits>
#include <utility>

#include "predictor/predictor.h"
#include "predictor/rates.h"
#include "proto/convert.h"
#include "server/wire_writer.h"

namespace perfcast::server {
namespace {

// Appends `from` to `to`: moved when `from` is an rvalue (a price used once,
// whose strings the response may take instead of copying them), copied
// otherwise.
template <typename List>
void AddStrings(List&& from, google::protobuf::RepeatedPtrField<std::string>* to) {
  to->Reserve(to->size() + static_cast<int>(from.size()));
  for (auto& text : from) {
    if constexpr (std::is_rvalue_reference_v<List&&>) {
      to->Add(std::move(text));
    } else {
      to->Add()->assign(text);
    }
  }
}

// Everything of a response that does not depend on the job size; `brief`
// keeps the numbers only (see PredictBatchRequest.brief). `Price` is a
// const serving::WorkloadPrice& (a kept answer: copied from) or a
// serving::WorkloadPrice rvalue (priced for this response alone: the
// strings of its lists move into `out`, a malloc and a copy fewer each).
template <typename Price>
void EncodePrice(Price&& price, bool brief, v1::PredictResponse* out) {
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
  out->set_gpu_model(price.node->gpu.model);
  out->set_cv_mape(price.cv_mape);
  out->set_method(std::string(predictor::MethodName(p.method, p.calibrated)));
  out->set_level1_ms(p.level1_ms);
  out->set_breakdown_scale(p.breakdown_scale);
  out->set_host_ms(p.host_ms);
  // What was predicted: a Hugging Face config or torchvision name resolved.
  proto::ToProto(price.workload->spec, out->mutable_workload());
  if (price.parallel.has_value()) EncodeParallel(*price.parallel, out->mutable_parallel());
  // Last: they may leave `price`'s lists empty.
  AddStrings(std::forward<Price>(price).prediction.features_used, out->mutable_features());
  AddStrings(std::forward<Price>(price).prediction.extrapolated,
             out->mutable_extrapolated_features());
  AddStrings(std::forward<Price>(price).prediction.uncalibrated_classes,
             out->mutable_uncalibrated_classes());
}

// A whole answer but the job: EncodePrice, and the memory of a one-GPU step.
template <typename Price>
void EncodeWholeAnswer(Price&& price, bool brief, v1::PredictResponse* out) {
  if (!brief && !price.parallel.has_value()) {
    EncodeMemory(price.memory, price.memory_verdict, out->mutable_memory());
  }
  EncodePrice(std::forward<Price>(price), brief, out);
}

}  // namespace

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
  out->set_memory_total_bytes(p.memory.total());
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

void EncodeAnswer(const serving::WorkloadPrice& price, bool brief, v1::PredictResponse* out) {
  EncodeWholeAnswer(price, brief, out);
}

void EncodeAnswer(serving::WorkloadPrice&& price, bool brief, v1::PredictResponse* out) {
  EncodeWholeAnswer(std::move(price), brief, out);
}

void EncodeJob(const predictor::JobEstimate& job, v1::PredictResponse* out) {
  out->set_iterations(job.iterations);
  out->set_job_seconds(job.seconds);
  out->set_job_seconds_low(job.lo_seconds);
  out->set_job_seconds_high(job.hi_seconds);
}

namespace {

// EncodeMemory's fields.
void AppendMemory(const predictor::MemoryEstimate& e, const predictor::MemoryVerdict& v,
                  WireWriter& w) {
  using M = v1::MemoryEstimate;
  w.Double(M::kPeakBytesFieldNumber, e.peak_bytes);
  w.Double(M::kPeakBytesLowFieldNumber, e.low_bytes);
  w.Double(M::kPeakBytesHighFieldNumber, e.high_bytes);
  w.Double(M::kRequiredBytesFieldNumber, e.required_bytes);
  w.Double(M::kDeviceBytesFieldNumber, v.device_bytes);
  w.Bool(M::kFitsFieldNumber, v.fits);
  w.String(M::kMethodFieldNumber, e.method);
  w.Double(M::kPersistentBytesFieldNumber, e.terms.persistent());
  w.Double(M::kActivationBytesFieldNumber, e.terms.transient());
}

// EncodeJob's fields.
void WriteJobFields(const predictor::JobEstimate& job, WireWriter& w) {
  using R = v1::PredictResponse;
  w.Int64(R::kIterationsFieldNumber, job.iterations);
  w.Double(R::kJobSecondsFieldNumber, job.seconds);
  w.Double(R::kJobSecondsLowFieldNumber, job.lo_seconds);
  w.Double(R::kJobSecondsHighFieldNumber, job.hi_seconds);
}

}  // namespace

std::string EncodeWorkloadEcho(const models::WorkloadSpec& spec) {
  v1::Workload workload;
  proto::ToProto(spec, &workload);
  return proto::DeterministicBytes(workload);
}

void AppendJobFields(const predictor::JobEstimate& job, std::string* out) {
  WireWriter w(out);
  WriteJobFields(job, w);
}

AnswerBytes SplitAroundJob(const v1::PredictResponse& answer) {
  v1::PredictResponse below;
  below.set_iteration_ms(answer.iteration_ms());
  below.set_iteration_ms_low(answer.iteration_ms_low());
  below.set_iteration_ms_high(answer.iteration_ms_high());
  v1::PredictResponse above = answer;
  above.clear_iteration_ms();
  above.clear_iteration_ms_low();
  above.clear_iteration_ms_high();
  above.clear_iterations();
  above.clear_job_seconds();
  above.clear_job_seconds_low();
  above.clear_job_seconds_high();
  return {proto::DeterministicBytes(below), proto::DeterministicBytes(above)};
}

void AppendAnswer(const AnswerBytes& answer, const predictor::JobEstimate& job,
                  std::string* out) {
  out->append(answer.head);
  AppendJobFields(job, out);
  out->append(answer.tail);
}

void AppendPredictResponse(const serving::PlannedPrice& price, absl::string_view workload_echo,
                           const predictor::JobEstimate& job, std::string* out) {
  using R = v1::PredictResponse;
  using O = v1::OperationEstimate;
  const predictor::PlannedPrediction& planned = price.prediction;
  const predictor::Prediction& p = planned.numbers;
  WireWriter w(out);
  w.Double(R::kIterationMsFieldNumber, p.iteration_ms);
  w.Double(R::kIterationMsLowFieldNumber, p.lo_ms);
  w.Double(R::kIterationMsHighFieldNumber, p.hi_ms);
  WriteJobFields(job, w);
  // EncodePrice's arithmetic, in its order.
  double total = 0;
  for (const auto& [op_class, ms] : planned.breakdown) total += ms;
  for (const auto& [op_class, ms] : planned.breakdown) {
    const size_t entry = w.BeginMessage(R::kBreakdownFieldNumber);
    w.String(O::kOpClassFieldNumber, *op_class);
    w.Double(O::kMsFieldNumber, ms);
    w.Double(O::kShareFieldNumber, total > 0 ? ms / total : 0);
    w.EndMessage(entry);
  }
  w.Int64(R::kModelIdFieldNumber, price.model->meta.id);
  w.Int64(R::kModelVersionFieldNumber, price.model->meta.version);
  for (const std::string* label : planned.features_used) w.Bytes(R::kFeaturesFieldNumber, *label);
  for (const std::string* label : planned.extrapolated) {
    w.Bytes(R::kExtrapolatedFeaturesFieldNumber, *label);
  }
  w.String(R::kRateSourceFieldNumber, predictor::RateSourceName(p.rate_source));
  w.String(R::kGpuModelFieldNumber, price.node->gpu.model);
  w.Double(R::kCvMapeFieldNumber, price.cv_mape);
  w.Int32(R::kLevelFieldNumber, predictor::MethodLevel(p.method));
  w.String(R::kMethodFieldNumber, predictor::MethodName(p.method, p.calibrated));
  for (const std::string* op_class : planned.uncalibrated_classes) {
    w.Bytes(R::kUncalibratedClassesFieldNumber, *op_class);
  }
  w.Bytes(R::kWorkloadFieldNumber, workload_echo);
  const size_t memory = w.BeginMessage(R::kMemoryFieldNumber);
  AppendMemory(price.memory, price.memory_verdict, w);
  w.EndMessage(memory);
  w.Double(R::kLevel1MsFieldNumber, p.level1_ms);
  w.Double(R::kBreakdownScaleFieldNumber, p.breakdown_scale);
  w.Double(R::kHostMsFieldNumber, p.host_ms);
}

void AppendPredictNotes(const std::vector<std::string>& notes, std::string* out) {
  WireWriter w(out);
  for (const std::string& note : notes) w.Bytes(v1::PredictResponse::kNotesFieldNumber, note);
}

}  // namespace perfcast::server

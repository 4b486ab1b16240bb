#include "proto/convert.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace perfcast::proto {
namespace {

// optional<double> <-> proto3 optional double, for message setters/getters.
#define PERFCAST_OPT_TO(msg, src, field) \
  if ((src).field.has_value()) (msg)->set_##field(*(src).field)
#define PERFCAST_OPT_FROM(dst, msg, field) \
  if ((msg).has_##field()) (dst).field = (msg).field()

}  // namespace

void ToProto(const models::GpuSpec& g, v1::GpuSpec* out) {
  out->set_model(g.model);
  out->set_vendor_name(g.vendor_name);
  out->set_architecture(g.architecture);
  out->set_compute_capability(g.compute_capability);
  out->set_sm_count(g.sm_count);
  out->set_boost_clock_mhz(g.boost_clock_mhz);
  out->set_memory_gib(g.memory_gib);
  out->set_memory_bus_width_bits(g.memory_bus_width_bits);
  out->set_memory_bandwidth_gbs(g.memory_bandwidth_gbs);
  out->set_fp32_tflops(g.fp32_tflops);
  out->set_tf32_tflops(g.tf32_tflops);
  out->set_fp16_tflops(g.fp16_tflops);
  out->set_bf16_tflops(g.bf16_tflops);
  out->set_fp64_tflops(g.fp64_tflops);
  out->set_l2_cache_mib(g.l2_cache_mib);
  out->set_interconnect(g.interconnect);
  out->set_tdp_watts(g.tdp_watts);
  out->set_nvlink_gbs(g.nvlink_gbs);
  out->set_nvlink_gpus(g.nvlink_gpus);
  out->set_pcie_gbs(g.pcie_gbs);
  out->set_network_gbs(g.network_gbs);
  out->set_vendor(g.vendor);
  out->set_base_clock_mhz(g.base_clock_mhz);
  out->set_fp8_tflops(g.fp8_tflops);
  out->set_int8_tops(g.int8_tops);
  out->set_pcie_generation(g.pcie_generation);
}

models::GpuSpec FromProto(const v1::GpuSpec& in) {
  models::GpuSpec g;
  g.model = in.model();
  g.vendor_name = in.vendor_name();
  g.architecture = in.architecture();
  g.compute_capability = in.compute_capability();
  g.sm_count = in.sm_count();
  g.boost_clock_mhz = in.boost_clock_mhz();
  g.memory_gib = in.memory_gib();
  g.memory_bus_width_bits = in.memory_bus_width_bits();
  g.memory_bandwidth_gbs = in.memory_bandwidth_gbs();
  g.fp32_tflops = in.fp32_tflops();
  g.tf32_tflops = in.tf32_tflops();
  g.fp16_tflops = in.fp16_tflops();
  g.bf16_tflops = in.bf16_tflops();
  g.fp64_tflops = in.fp64_tflops();
  g.l2_cache_mib = in.l2_cache_mib();
  g.interconnect = in.interconnect();
  g.tdp_watts = in.tdp_watts();
  g.nvlink_gbs = in.nvlink_gbs();
  g.nvlink_gpus = in.nvlink_gpus();
  g.pcie_gbs = in.pcie_gbs();
  g.network_gbs = in.network_gbs();
  g.vendor = in.vendor();
  g.base_clock_mhz = in.base_clock_mhz();
  g.fp8_tflops = in.fp8_tflops();
  g.int8_tops = in.int8_tops();
  g.pcie_generation = in.pcie_generation();
  return g;
}

void ToProto(const models::HostSpec& h, v1::HostSpec* out) {
  out->set_hostname(h.hostname);
  out->set_cpu_model(h.cpu_model);
  out->set_cpu_cores(h.cpu_cores);
  out->set_driver_version(h.driver_version);
  out->set_cuda_version(h.cuda_version);
  out->set_torch_version(h.torch_version);
  out->set_python_version(h.python_version);
  out->set_python_torch_version(h.python_torch_version);
}

models::HostSpec FromProto(const v1::HostSpec& in) {
  return {.hostname = in.hostname(),
          .cpu_model = in.cpu_model(),
          .cpu_cores = in.cpu_cores(),
          .driver_version = in.driver_version(),
          .cuda_version = in.cuda_version(),
          .torch_version = in.torch_version(),
          .python_version = in.python_version(),
          .python_torch_version = in.python_torch_version()};
}

void ToProto(const models::MeasuredRates& m, v1::MeasuredRates* out) {
  PERFCAST_OPT_TO(out, m, memory_bandwidth_gbs);
  PERFCAST_OPT_TO(out, m, fp32_tflops);
  PERFCAST_OPT_TO(out, m, tf32_tflops);
  PERFCAST_OPT_TO(out, m, fp16_tflops);
  PERFCAST_OPT_TO(out, m, bf16_tflops);
  PERFCAST_OPT_TO(out, m, fp64_tflops);
  PERFCAST_OPT_TO(out, m, launch_latency_us);
  PERFCAST_OPT_TO(out, m, h2d_pinned_gbs);
  PERFCAST_OPT_TO(out, m, h2d_pageable_gbs);
  PERFCAST_OPT_TO(out, m, cpu_single_thread_score);
  PERFCAST_OPT_TO(out, m, idle_power_watts);
  PERFCAST_OPT_TO(out, m, dispatch_ops_per_s);
  PERFCAST_OPT_TO(out, m, python_op_us);
  PERFCAST_OPT_TO(out, m, torchscript_op_us);
}

models::MeasuredRates FromProto(const v1::MeasuredRates& in) {
  models::MeasuredRates m;
  PERFCAST_OPT_FROM(m, in, memory_bandwidth_gbs);
  PERFCAST_OPT_FROM(m, in, fp32_tflops);
  PERFCAST_OPT_FROM(m, in, tf32_tflops);
  PERFCAST_OPT_FROM(m, in, fp16_tflops);
  PERFCAST_OPT_FROM(m, in, bf16_tflops);
  PERFCAST_OPT_FROM(m, in, fp64_tflops);
  PERFCAST_OPT_FROM(m, in, launch_latency_us);
  PERFCAST_OPT_FROM(m, in, h2d_pinned_gbs);
  PERFCAST_OPT_FROM(m, in, h2d_pageable_gbs);
  PERFCAST_OPT_FROM(m, in, cpu_single_thread_score);
  PERFCAST_OPT_FROM(m, in, idle_power_watts);
  PERFCAST_OPT_FROM(m, in, dispatch_ops_per_s);
  PERFCAST_OPT_FROM(m, in, python_op_us);
  PERFCAST_OPT_FROM(m, in, torchscript_op_us);
  return m;
}

void ToProto(const models::Node& n, v1::Node* out) {
  out->set_id(n.id);
  out->set_name(n.name);
  for (const auto& [key, value] : n.labels) (*out->mutable_labels())[key] = value;
  out->set_gpu_count(n.gpu_count);
  ToProto(n.gpu, out->mutable_gpu());
  ToProto(n.host, out->mutable_host());
  ToProto(n.measured, out->mutable_measured());
  switch (n.source) {
    case models::NodeSource::kCatalog: out->set_source(v1::NODE_SOURCE_CATALOG); break;
    case models::NodeSource::kSpecFile: out->set_source(v1::NODE_SOURCE_SPEC_FILE); break;
    case models::NodeSource::kAgent: out->set_source(v1::NODE_SOURCE_AGENT); break;
  }
  out->set_registered_at_us(n.registered_at_us);
}

absl::StatusOr<models::Node> FromProto(const v1::Node& in) {
  models::Node n;
  n.id = in.id();
  n.name = in.name();
  for (const auto& [key, value] : in.labels()) n.labels[key] = value;
  n.gpu_count = in.gpu_count();
  n.gpu = FromProto(in.gpu());
  n.host = FromProto(in.host());
  n.measured = FromProto(in.measured());
  switch (in.source()) {
    case v1::NODE_SOURCE_UNSPECIFIED:
    case v1::NODE_SOURCE_CATALOG: n.source = models::NodeSource::kCatalog; break;
    case v1::NODE_SOURCE_SPEC_FILE: n.source = models::NodeSource::kSpecFile; break;
    case v1::NODE_SOURCE_AGENT: n.source = models::NodeSource::kAgent; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown node source ", in.source()));
  }
  n.registered_at_us = in.registered_at_us();
  return n;
}

v1::Precision ToProto(models::Precision p) {
  switch (p) {
    case models::Precision::kFp32: return v1::PRECISION_FP32;
    case models::Precision::kTf32: return v1::PRECISION_TF32;
    case models::Precision::kFp16Amp: return v1::PRECISION_FP16_AMP;
    case models::Precision::kBf16Amp: return v1::PRECISION_BF16_AMP;
    case models::Precision::kFp64: return v1::PRECISION_FP64;
    case models::Precision::kFp8: return v1::PRECISION_FP8;
    case models::Precision::kInt8: return v1::PRECISION_INT8;
    case models::Precision::kStrictFp32: return v1::PRECISION_STRICT_FP32;
  }
  return v1::PRECISION_UNSPECIFIED;
}

v1::Phase ToProto(models::Phase p) {
  return p == models::Phase::kTrain ? v1::PHASE_TRAIN : v1::PHASE_INFERENCE;
}

v1::WorkloadKind ToProto(models::WorkloadKind k) {
  return k == models::WorkloadKind::kModel ? v1::WORKLOAD_KIND_MODEL : v1::WORKLOAD_KIND_OPERATION;
}

v1::Loop ToProto(models::Loop l) {
  return l == models::Loop::kPython ? v1::LOOP_PYTHON : v1::LOOP_CPP;
}

absl::StatusOr<models::Loop> FromProto(v1::Loop l) {
  switch (l) {
    case v1::LOOP_UNSPECIFIED:
    case v1::LOOP_PYTHON: return models::Loop::kPython;
    case v1::LOOP_CPP: return models::Loop::kCpp;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown loop value ", l, " (expected LOOP_PYTHON or LOOP_CPP)"));
  }
}

absl::StatusOr<models::Precision> FromProto(v1::Precision p) {
  switch (p) {
    case v1::PRECISION_UNSPECIFIED:
    case v1::PRECISION_FP32: return models::Precision::kFp32;
    case v1::PRECISION_TF32: return models::Precision::kTf32;
    case v1::PRECISION_FP16_AMP: return models::Precision::kFp16Amp;
    case v1::PRECISION_BF16_AMP: return models::Precision::kBf16Amp;
    case v1::PRECISION_FP8: return models::Precision::kFp8;
    case v1::PRECISION_INT8: return models::Precision::kInt8;
    case v1::PRECISION_STRICT_FP32: return models::Precision::kStrictFp32;
    case v1::PRECISION_FP64: return models::Precision::kFp64;
    default: return absl::InvalidArgumentError(absl::StrCat("unknown precision value ", p));
  }
}

absl::StatusOr<models::Phase> FromProto(v1::Phase p) {
  switch (p) {
    case v1::PHASE_UNSPECIFIED:
    case v1::PHASE_TRAIN: return models::Phase::kTrain;
    case v1::PHASE_INFERENCE: return models::Phase::kInference;
    default: return absl::InvalidArgumentError(absl::StrCat("unknown phase value ", p));
  }
}

absl::StatusOr<models::WorkloadKind> FromProto(v1::WorkloadKind k) {
  switch (k) {
    case v1::WORKLOAD_KIND_UNSPECIFIED:
    case v1::WORKLOAD_KIND_MODEL: return models::WorkloadKind::kModel;
    case v1::WORKLOAD_KIND_OPERATION: return models::WorkloadKind::kOperation;
    default: return absl::InvalidArgumentError(absl::StrCat("unknown workload kind value ", k));
  }
}

void ToProto(const models::WorkloadSpec& w, v1::Workload* out) {
  out->set_kind(ToProto(w.kind));
  out->set_family(w.family);
  for (const auto& [key, value] : w.params) (*out->mutable_params())[key] = value;
  out->set_batch_size(w.batch_size);
  out->set_precision(ToProto(w.precision));
  out->set_phase(ToProto(w.phase));
  out->set_optimizer(w.optimizer);
}

absl::StatusOr<models::WorkloadSpec> FromProto(const v1::Workload& in) {
  if (!in.hf_config_json().empty() || !in.torchvision().empty()) {
    return absl::InvalidArgumentError(
        "workload: hf_config_json and torchvision describe models to predict; a stored "
        "workload states its family and params");
  }
  models::WorkloadSpec w;
  ASSIGN_OR_RETURN(models::WorkloadKind kind, FromProto(in.kind()));
  ASSIGN_OR_RETURN(models::Precision precision, FromProto(in.precision()));
  ASSIGN_OR_RETURN(models::Phase phase, FromProto(in.phase()));
  w.kind = kind;
  w.precision = precision;
  w.phase = phase;
  w.family = in.family();
  for (const auto& [key, value] : in.params()) w.params[key] = value;
  w.batch_size = in.batch_size();
  if (!in.optimizer().empty()) w.optimizer = in.optimizer();
  return w;
}

void ToProto(const models::Profile& p, v1::Profile* out) {
  out->set_id(p.id);
  out->set_node_name(p.node_name);
  ToProto(p.workload, out->mutable_workload());
  v1::TimingStats* t = out->mutable_iteration();
  t->set_count(p.iteration.count);
  t->set_mean_ms(p.iteration.mean_ms);
  t->set_median_ms(p.iteration.median_ms);
  t->set_p95_ms(p.iteration.p95_ms);
  t->set_stddev_ms(p.iteration.stddev_ms);
  t->set_min_ms(p.iteration.min_ms);
  t->set_max_ms(p.iteration.max_ms);
  v1::PhaseBreakdown* ph = out->mutable_phases();
  PERFCAST_OPT_TO(ph, p.phases, data_load_ms);
  PERFCAST_OPT_TO(ph, p.phases, h2d_ms);
  PERFCAST_OPT_TO(ph, p.phases, forward_ms);
  PERFCAST_OPT_TO(ph, p.phases, backward_ms);
  PERFCAST_OPT_TO(ph, p.phases, optimizer_ms);
  out->set_repeats(p.repeats);
  PERFCAST_OPT_TO(out, p, repeat_cv);
  PERFCAST_OPT_TO(out, p, epoch_s);
  PERFCAST_OPT_TO(out, p, throughput_per_s);
  PERFCAST_OPT_TO(out, p, peak_memory_bytes);
  PERFCAST_OPT_TO(out, p, achieved_tflops);
  PERFCAST_OPT_TO(out, p, roofline_fraction);
  out->set_measured_at_us(p.measured_at_us);
  out->set_agent_version(p.agent_version);
  out->set_content_hash(p.content_hash);
  out->set_method_version(p.method_version);
  out->set_loop(p.loop);
  const models::RunConditions& c = p.conditions;
  if (c == models::RunConditions{}) return;
  v1::RunConditions* conditions = out->mutable_conditions();
  PERFCAST_OPT_TO(conditions, c, dispatch_ops_per_s);
  PERFCAST_OPT_TO(conditions, c, launch_latency_us);
  PERFCAST_OPT_TO(conditions, c, cpu_single_thread_score);
  PERFCAST_OPT_TO(conditions, c, h2d_pinned_gbs);
  PERFCAST_OPT_TO(conditions, c, h2d_pageable_gbs);
  PERFCAST_OPT_TO(conditions, c, board_power_w);
  PERFCAST_OPT_TO(conditions, c, sm_clock_mhz);
  PERFCAST_OPT_TO(conditions, c, gpu_temperature_c);
  PERFCAST_OPT_TO(conditions, c, python_op_us);
  PERFCAST_OPT_TO(conditions, c, torchscript_op_us);
}

absl::StatusOr<models::Profile> FromProto(const v1::Profile& in) {
  models::Profile p;
  ASSIGN_OR_RETURN(p.workload, FromProto(in.workload()));
  p.id = in.id();
  p.node_name = in.node_name();
  const v1::TimingStats& t = in.iteration();
  p.iteration = {.count = t.count(), .mean_ms = t.mean_ms(), .median_ms = t.median_ms(),
                 .p95_ms = t.p95_ms(), .stddev_ms = t.stddev_ms(), .min_ms = t.min_ms(),
                 .max_ms = t.max_ms()};
  const v1::PhaseBreakdown& ph = in.phases();
  PERFCAST_OPT_FROM(p.phases, ph, data_load_ms);
  PERFCAST_OPT_FROM(p.phases, ph, h2d_ms);
  PERFCAST_OPT_FROM(p.phases, ph, forward_ms);
  PERFCAST_OPT_FROM(p.phases, ph, backward_ms);
  PERFCAST_OPT_FROM(p.phases, ph, optimizer_ms);
  p.repeats = in.repeats() == 0 ? 1 : in.repeats();
  PERFCAST_OPT_FROM(p, in, repeat_cv);
  PERFCAST_OPT_FROM(p, in, epoch_s);
  PERFCAST_OPT_FROM(p, in, throughput_per_s);
  PERFCAST_OPT_FROM(p, in, peak_memory_bytes);
  PERFCAST_OPT_FROM(p, in, achieved_tflops);
  PERFCAST_OPT_FROM(p, in, roofline_fraction);
  p.measured_at_us = in.measured_at_us();
  p.agent_version = in.agent_version();
  p.content_hash = in.content_hash();
  p.method_version = in.method_version() == 0 ? 1 : in.method_version();
  p.loop = in.loop();
  const v1::RunConditions& c = in.conditions();
  PERFCAST_OPT_FROM(p.conditions, c, dispatch_ops_per_s);
  PERFCAST_OPT_FROM(p.conditions, c, launch_latency_us);
  PERFCAST_OPT_FROM(p.conditions, c, cpu_single_thread_score);
  PERFCAST_OPT_FROM(p.conditions, c, h2d_pinned_gbs);
  PERFCAST_OPT_FROM(p.conditions, c, h2d_pageable_gbs);
  PERFCAST_OPT_FROM(p.conditions, c, board_power_w);
  PERFCAST_OPT_FROM(p.conditions, c, sm_clock_mhz);
  PERFCAST_OPT_FROM(p.conditions, c, gpu_temperature_c);
  PERFCAST_OPT_FROM(p.conditions, c, python_op_us);
  PERFCAST_OPT_FROM(p.conditions, c, torchscript_op_us);
  return p;
}

#undef PERFCAST_OPT_TO
#undef PERFCAST_OPT_FROM

void AppendDeterministic(const google::protobuf::MessageLite& message, std::string* out) {
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
}

std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  AppendDeterministic(message, &bytes);
  return bytes;
}

}  // namespace perfcast::proto

#include "tests/server/synthetic_store.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::testing {
namespace {

models::Node MakeNode(const std::string& name, const std::string& arch, int sms, double fp32,
                      double fp16, double bandwidth, double latency_us) {
  models::Node node;
  node.name = name;
  node.gpu.model = name + "-gpu";
  node.gpu.architecture = arch;
  node.gpu.sm_count = sms;
  // Spec sheets promise more than anyone measures.
  node.gpu.fp32_tflops = fp32 * 1.25;
  node.gpu.tf32_tflops = fp16 * 0.6;
  node.gpu.fp16_tflops = fp16 * 1.25;
  node.gpu.bf16_tflops = fp16 * 1.25;
  node.gpu.memory_bandwidth_gbs = bandwidth * 1.25;
  node.gpu.memory_gib = 80;
  node.measured.fp32_tflops = fp32;
  node.measured.tf32_tflops = fp16 * 0.5;
  node.measured.fp16_tflops = fp16;
  node.measured.bf16_tflops = fp16;
  node.measured.memory_bandwidth_gbs = bandwidth;
  node.measured.launch_latency_us = latency_us;
  node.measured.h2d_pageable_gbs = 10;
  node.measured.h2d_pinned_gbs = 20;
  node.source = models::NodeSource::kAgent;
  return node;
}

double RateTflops(const models::Node& node, models::Precision precision) {
  switch (precision) {
    case models::Precision::kFp16Amp:
    case models::Precision::kBf16Amp:
      return *node.measured.fp16_tflops;
    case models::Precision::kTf32:
      return *node.measured.tf32_tflops;
    default:
      return *node.measured.fp32_tflops;
  }
}

double TrueCallMs(const models::Operation& op, const models::Node& node) {
  const double launch = 1e-3 * *node.measured.launch_latency_us * op.launches;
  if (op.op_class == models::OpClass::kHostToDevice) {
    return 1e3 * op.bytes / (1e9 * *node.measured.h2d_pageable_gbs) + launch;
  }
  const double compute = 1e3 * op.flops / (1e12 * RateTflops(node, op.precision));
  const double memory = 1e3 * op.bytes / (1e9 * *node.measured.memory_bandwidth_gbs);
  return 1.3 * compute + 1.15 * memory + launch;
}

models::Profile MakeProfile(const std::string& node, const models::WorkloadSpec& spec, double ms,
                            int64_t at_us) {
  models::Profile p;
  p.node_name = node;
  p.workload = spec;
  p.iteration = {.count = 20, .mean_ms = ms, .median_ms = ms, .p95_ms = ms, .stddev_ms = 0,
                 .min_ms = ms, .max_ms = ms};
  p.measured_at_us = at_us;
  p.agent_version = "perfcast-agent synthetic";  // an agent's run: methods order it
  return p;
}

}  // namespace

std::vector<models::Node> SyntheticNodes() {
  return {MakeNode("alpha1", "alpha", 40, 10, 60, 700, 6),
          MakeNode("alpha2", "alpha", 80, 19, 120, 1500, 5),
          MakeNode("beta1", "beta", 108, 18, 250, 1900, 4),
          MakeNode("beta2", "beta", 132, 50, 700, 3200, 3.5)};
}

double TrueIterationMs(const models::WorkloadDescriptor& descriptor, const models::Node& node) {
  double total = 0;
  for (const models::Operation& op : descriptor.operations) total += op.count * TrueCallMs(op, node);
  return total;
}

absl::Status FillSyntheticStore(db::Store& store, const std::vector<models::Node>& nodes,
                                const std::vector<std::string>& unprofiled) {
  std::vector<models::WorkloadSpec> specs;
  for (models::Precision precision : {models::Precision::kFp32, models::Precision::kBf16Amp}) {
    for (int64_t m : {256, 1024, 4096}) {
      for (int64_t n : {512, 2048}) {
        for (int64_t k : {256, 1024, 4096}) {
          models::WorkloadSpec s;
          s.kind = models::WorkloadKind::kOperation;
          s.family = "gemm";
          s.params = {{"m", m}, {"n", n}, {"k", k}};
          s.precision = precision;
          s.phase = models::Phase::kInference;
          specs.push_back(s);
        }
      }
    }
    for (int64_t numel = 1 << 12; numel <= (1 << 28); numel <<= 2) {
      models::WorkloadSpec s;
      s.kind = models::WorkloadKind::kOperation;
      s.family = "elementwise";
      s.params = {{"numel", numel}};
      s.precision = precision;
      s.phase = models::Phase::kInference;
      specs.push_back(s);
    }
    for (int64_t layers : {1, 2, 3, 4}) {
      for (int64_t hidden : {128, 256, 512}) {
        for (int64_t batch : {32, 128}) {
          models::WorkloadSpec s;
          s.family = "lstm";
          s.params = {{"layers", layers}, {"hidden", hidden}};
          s.batch_size = batch;
          s.precision = precision;
          specs.push_back(s);
        }
      }
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<db::ImportTransaction> import, store.BeginImport());
  int64_t index = 0;
  for (const models::Node& node : nodes) {
    RETURN_IF_ERROR(import->UpsertNode(node));
    if (std::find(unprofiled.begin(), unprofiled.end(), node.name) != unprofiled.end()) continue;
    for (const models::WorkloadSpec& spec : specs) {
      ASSIGN_OR_RETURN(models::WorkloadDescriptor d, models::Describe(spec));
      const models::Profile p =
          MakeProfile(node.name, d.spec, TrueIterationMs(d, node), 1'700'000'000'000'000 + index);
      RETURN_IF_ERROR(import->Add(index++, p));
    }
  }
  if (!import->summary().rejected.empty()) {
    return absl::InternalError(absl::StrCat("synthetic profile rejected: ",
                                            import->summary().rejected.front().reason));
  }
  absl::StatusOr<db::ImportSummary> summary = import->Commit();
  return summary.status();
}

}  // namespace perfcast::testing

#include "models/precision_support.h"

#include "absl/strings/str_cat.h"

namespace perfcast::models {
namespace {

// The architectures whose FP8 path PyTorch training recipes use
// (Transformer Engine, torchao float8 and their ROCm ports). Ada has FP8
// tensor cores too, but issue 29 scopes fp8 to these.
bool HasFp8TrainingPath(const GpuSpec& gpu) {
  return gpu.architecture == "hopper" || gpu.architecture == "blackwell" ||
         gpu.architecture == "cdna3";
}

bool Positive(double spec, const std::optional<double>& measured) {
  return spec > 0 || measured.value_or(0) > 0;
}

std::string Gpu(const Node& node) {
  return absl::StrCat(node.gpu.model, node.gpu.architecture.empty()
                                          ? ""
                                          : absl::StrCat(" (", node.gpu.architecture, ")"));
}

}  // namespace

absl::StatusOr<std::optional<std::string>> CheckPrecision(const Node& node,
                                                          const WorkloadSpec& spec) {
  if (spec.precision == Precision::kInt8 && spec.phase == Phase::kTrain) {
    return absl::InvalidArgumentError(
        "int8 is an inference precision: train in bf16-amp, fp16-amp or fp8");
  }
  if (node.gpu_count == 0 || node.gpu.architecture == "cpu") return std::nullopt;
  const GpuSpec& gpu = node.gpu;
  const MeasuredRates& measured = node.measured;
  switch (spec.precision) {
    case Precision::kFp8:
      if (!HasFp8TrainingPath(gpu) || !(gpu.fp8_tflops > 0)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "fp8 is priced on Hopper, Blackwell and AMD MI300 (CDNA3) only; ", Gpu(node),
            " has no FP8 path PyTorch uses: use bf16-amp or fp16-amp"));
      }
      return std::nullopt;
    case Precision::kInt8:
      if (!(gpu.int8_tops > 0)) {
        return absl::FailedPreconditionError(absl::StrCat(
            Gpu(node), " has no INT8 tensor-core rate: use fp16-amp (or give int8_tops in its spec)"));
      }
      return std::nullopt;
    case Precision::kBf16Amp:
      if (!Positive(gpu.bf16_tflops, measured.bf16_tflops)) {
        return absl::FailedPreconditionError(absl::StrCat(
            Gpu(node), " has no bf16 tensor cores: PyTorch emulates bf16 there below its fp32 "
                       "speed; use fp16-amp"));
      }
      return std::nullopt;
    case Precision::kFp16Amp:
      if (!Positive(gpu.fp16_tflops, measured.fp16_tflops)) {
        return absl::FailedPreconditionError(absl::StrCat(
            Gpu(node), " has no fp16 tensor-core or half-rate path: use fp32"));
      }
      return std::nullopt;
    case Precision::kTf32:
      if (!Positive(gpu.tf32_tflops, measured.tf32_tflops)) {
        return std::optional<std::string>(absl::StrCat(
            "tf32 on ", Gpu(node), " runs as fp32 (no TF32 tensor cores): priced at the fp32 rate"));
      }
      return std::nullopt;
    case Precision::kFp32:
    case Precision::kStrictFp32:
    case Precision::kFp64:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace perfcast::models

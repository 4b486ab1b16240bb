#include "predictor/layout.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "models/architecture.h"
#include "models/descriptor.h"

namespace perfcast::predictor {
namespace {

// Bounds that keep every product of degrees exact and far from overflow;
// no job runs on a million GPUs.
constexpr int64_t kMaxDegree = int64_t{1} << 20;

absl::Status Degree(const char* flag, int value) {
  if (value < 1 || value > kMaxDegree) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be in [1, ", kMaxDegree, "], got ", value));
  }
  return absl::OkStatus();
}

// What each framework runs: a strategy it lacks is a question nobody can
// measure, so it is refused rather than priced.
absl::Status FrameworkSupports(const ParallelLayout& layout) {
  switch (layout.framework) {
    case Framework::kPytorch:
      return absl::OkStatus();
    case Framework::kMegatron:
      if (layout.zero > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--framework megatron shards optimizer states only (its distributed optimizer): "
            "--zero 0 or 1, got ",
            layout.zero));
      }
      return absl::OkStatus();
    case Framework::kDeepspeed:
      if (layout.tensor > 1) {
        return absl::InvalidArgumentError(
            "--framework deepspeed has no tensor parallelism of its own: --tensor-parallel 1, "
            "or --framework megatron");
      }
      if (layout.pipeline > 1 && layout.zero > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--framework deepspeed runs --pipeline-parallel with --zero 0 or 1 only, got --zero ",
            layout.zero));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("--framework: unknown framework");
}

}  // namespace

std::optional<int64_t> OperationLayer(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "layer")) return std::nullopt;
  const size_t dot = name.find('.');
  int64_t index = 0;
  if (dot == absl::string_view::npos || !absl::SimpleAtoi(name.substr(0, dot), &index)) {
    return std::nullopt;
  }
  return index;
}

bool IsBackwardOperation(absl::string_view name) {
  for (absl::string_view suffix : {".dx", ".dw", ".db", ".bwd", ".dlhs", ".drhs"}) {
    if (absl::EndsWith(name, suffix)) return true;
  }
  return false;
}

bool TensorParallelSplits(absl::string_view name, bool has_lm_head, Framework framework) {
  if (OperationLayer(name).has_value()) {
    return (absl::StrContains(name, ".attn.") || absl::StrContains(name, ".ffn.") ||
            absl::StrContains(name, ".mlp.")) &&
           !absl::StrContains(name, ".residual");
  }
  if (framework == Framework::kPytorch) return false;
  if (absl::StartsWith(name, "embed.tokens")) return true;
  return has_lm_head && (absl::StartsWith(name, "lm_head") || absl::StartsWith(name, "loss."));
}

absl::string_view FrameworkName(Framework framework) {
  switch (framework) {
    case Framework::kPytorch: return "pytorch";
    case Framework::kMegatron: return "megatron";
    case Framework::kDeepspeed: return "deepspeed";
  }
  return "unknown";
}

absl::StatusOr<Framework> ParseFramework(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (Framework f : {Framework::kPytorch, Framework::kMegatron, Framework::kDeepspeed}) {
    if (lower == FrameworkName(f)) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--framework must be pytorch, megatron or deepspeed, got '", name, "'"));
}

std::string DescribeLayout(const ParallelLayout& layout) {
  std::vector<std::string> parts;
  if (layout.data > 1) parts.push_back(absl::StrCat("DP", layout.data));
  if (layout.tensor > 1) parts.push_back(absl::StrCat("TP", layout.tensor));
  if (layout.pipeline > 1) parts.push_back(absl::StrCat("PP", layout.pipeline));
  if (layout.micro_batches > 1) parts.push_back(absl::StrCat("M", layout.micro_batches));
  if (layout.zero > 0) parts.push_back(absl::StrCat("ZeRO-", layout.zero));
  if (layout.activation_checkpointing) parts.push_back("ckpt");
  if (layout.framework != Framework::kPytorch) {
    parts.push_back(std::string(FrameworkName(layout.framework)));
  }
  if (parts.empty()) return "1 GPU";
  return absl::StrJoin(parts, " ");
}

std::string LayoutName(const ParallelLayout& layout) {
  std::string name = absl::StrCat("dp", layout.data);
  if (layout.tensor > 1) absl::StrAppend(&name, "·tp", layout.tensor);
  if (layout.pipeline > 1) absl::StrAppend(&name, "·pp", layout.pipeline);
  if (layout.micro_batches > 1) absl::StrAppend(&name, "·m", layout.micro_batches);
  if (layout.zero > 0) absl::StrAppend(&name, "·zero", layout.zero);
  if (layout.activation_checkpointing) absl::StrAppend(&name, "·ckpt");
  return name;
}

namespace {

// ValidateLayout's checks of the layout alone.
absl::Status ValidateDegrees(const ParallelLayout& layout, int max_gpus) {
  for (auto [flag, value] : {std::pair{"--data-parallel", layout.data},
                             std::pair{"--tensor-parallel", layout.tensor},
                             std::pair{"--pipeline-parallel", layout.pipeline},
                             std::pair{"--micro-batches", layout.micro_batches}}) {
    RETURN_IF_ERROR(Degree(flag, value));
  }
  if (layout.zero < 0 || layout.zero > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("--zero must be 0, 1, 2 or 3, got ", layout.zero));
  }
  if (layout.zero > 0 && layout.data == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--zero ", layout.zero,
        " shards across data-parallel replicas, but there is one: --data-parallel >= 2"));
  }
  RETURN_IF_ERROR(FrameworkSupports(layout));
  const int64_t gpus = int64_t{layout.data} * layout.tensor * layout.pipeline;
  if (gpus > kMaxDegree) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-parallel × --tensor-parallel × --pipeline-parallel = ", gpus, " GPUs exceeds ",
        kMaxDegree));
  }
  if (max_gpus > 0 && gpus > max_gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-parallel × --tensor-parallel × --pipeline-parallel = ", layout.data, " × ",
        layout.tensor, " × ", layout.pipeline, " = ", gpus, " GPUs, but the node has ",
        max_gpus));
  }
  return absl::OkStatus();
}

// ValidateLayout's checks against the workload.
absl::Status ValidateAgainst(const models::WorkloadSpec& spec, const ParallelLayout& layout) {
  if (spec.phase != models::Phase::kTrain &&
      (layout.zero > 0 || layout.activation_checkpointing)) {
    return absl::InvalidArgumentError(
        "--zero and --activation-checkpointing apply to training (--phase train)");
  }
  const int64_t replica_split = int64_t{layout.data} * layout.micro_batches;
  if (spec.batch_size % replica_split != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-parallel × --micro-batches = ", layout.data, " × ", layout.micro_batches,
        " must divide the global batch size ", spec.batch_size));
  }
  if (layout.tensor == 1 && layout.pipeline == 1) return absl::OkStatus();
  for (const char* name : {"layers", "heads", "hidden", "seq_len"}) {
    if (!spec.params.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          layout.tensor > 1 ? "--tensor-parallel" : "--pipeline-parallel",
          " splits transformer layers (families with layers, heads, hidden and seq_len); family '",
          spec.family, "' has none"));
    }
  }
  const int64_t heads = models::Param(spec, "heads");
  const int64_t layers = models::Param(spec, "layers");
  if (heads % layout.tensor != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--tensor-parallel ", layout.tensor,
                                                   " must divide the attention heads (", heads,
                                                   ")"));
  }
  // kv_heads and ffn are optional (0 when absent: nothing to divide).
  if (const int64_t kv = models::Param(spec, "kv_heads"); kv > 0 && kv % layout.tensor != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--tensor-parallel ", layout.tensor,
                                                   " must divide the key/value heads (", kv,
                                                   ")"));
  }
  if (const int64_t ffn = models::Param(spec, "ffn"); ffn % layout.tensor != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--tensor-parallel ", layout.tensor,
                                                   " must divide the MLP width ffn (", ffn,
                                                   ")"));
  }
  if (layout.pipeline > layers) {
    return absl::InvalidArgumentError(absl::StrCat("--pipeline-parallel ", layout.pipeline,
                                                   " exceeds the ", layers,
                                                   " layers (at most one stage per layer)"));
  }
  if (layout.framework == Framework::kPytorch && layout.micro_batches < layout.pipeline) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--micro-batches ", layout.micro_batches, " is fewer than the ", layout.pipeline,
        " pipeline stages: PyTorch's 1F1B schedule needs --micro-batches >= "
        "--pipeline-parallel (Megatron's runs with fewer: --framework megatron)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateLayout(const models::WorkloadSpec& raw_spec, const ParallelLayout& layout,
                            int max_gpus) {
  RETURN_IF_ERROR(ValidateDegrees(layout, max_gpus));
  ASSIGN_OR_RETURN(models::WorkloadSpec spec, models::NormalizeSpec(raw_spec));
  return ValidateAgainst(spec, layout);
}

absl::Status ValidateNormalizedLayout(const models::WorkloadSpec& spec,
                                      const ParallelLayout& layout, int max_gpus) {
  RETURN_IF_ERROR(ValidateDegrees(layout, max_gpus));
  return ValidateAgainst(spec, layout);
}

}  // namespace perfcast::predictor

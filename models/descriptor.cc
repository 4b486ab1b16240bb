#include "models/descriptor.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "models/families/families.h"

namespace perfcast::models {
namespace {

constexpr std::pair<OpClass, absl::string_view> kOpClassNames[] = {
    {OpClass::kGemm, "gemm"},
    {OpClass::kConv, "conv"},
    {OpClass::kRecurrent, "recurrent"},
    {OpClass::kAttention, "attention"},
    {OpClass::kElementwise, "elementwise"},
    {OpClass::kEmbedding, "embedding"},
    {OpClass::kOptimizer, "optimizer"},
    {OpClass::kHostToDevice, "h2d"},
    {OpClass::kHostOverhead, "host"},
    {OpClass::kCollective, "collective"},
    {OpClass::kNorm, "norm"},
    {OpClass::kSoftmax, "softmax"},
};

// The registry: models first, then operations. Built once, never destroyed.
const std::vector<families::FamilyDef>& Registry() {
  static const auto* registry = [] {
    auto* defs = new std::vector<families::FamilyDef>{
        families::LstmFamily(),   families::CnnFamily(),         families::StgcnFamily(),
        families::ResNetFamily(), families::TransformerFamily(), families::DlrmFamily(),
        families::DecoderFamily(), families::BertFamily(),       families::VitFamily(),
        families::ResNetImageNetFamily(),
    };
    for (families::FamilyDef& def : families::OperationFamilies()) {
      defs->push_back(std::move(def));
    }
    return defs;
  }();
  return *registry;
}

const families::FamilyDef* FindDef(absl::string_view name) {
  for (const families::FamilyDef& def : Registry()) {
    if (def.info.name == name) return &def;
  }
  return nullptr;
}

std::string FamilyNames() {
  std::vector<std::string> names;
  for (const families::FamilyDef& def : Registry()) names.push_back(def.info.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::string_view OpClassName(OpClass op_class) {
  for (const auto& [value, name] : kOpClassNames) {
    if (value == op_class) return name;
  }
  return "unknown";
}

absl::StatusOr<OpClass> ParseOpClass(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [value, text] : kOpClassNames) {
    if (text == lower) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown operation class '", name,
      "' (expected gemm, conv, recurrent, attention, elementwise, embedding, optimizer, h2d, "
      "host, norm, softmax or collective)"));
}

const std::vector<OpClass>& AllOpClasses() {
  static const auto* classes = [] {
    auto* all = new std::vector<OpClass>;
    for (const auto& [value, name] : kOpClassNames) all->push_back(value);
    return all;
  }();
  return *classes;
}

const std::vector<FamilyInfo>& Families() {
  static const auto* infos = [] {
    auto* all = new std::vector<FamilyInfo>;
    for (const families::FamilyDef& def : Registry()) all->push_back(def.info);
    return all;
  }();
  return *infos;
}

absl::StatusOr<FamilyInfo> FindFamily(absl::string_view name) {
  const families::FamilyDef* def = FindDef(name);
  if (def == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown workload family '", name, "' (known: ", FamilyNames(), ")"));
  }
  return def->info;
}

absl::StatusOr<WorkloadSpec> NormalizeSpec(const WorkloadSpec& spec) {
  const families::FamilyDef* def = FindDef(spec.family);
  if (def == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown workload family '", spec.family,
                                                   "' (known: ", FamilyNames(), ")"));
  }
  if (def->info.kind != spec.kind) {
    return absl::InvalidArgumentError(absl::StrCat(
        "family '", spec.family, "' is a ", WorkloadKindName(def->info.kind),
        " family, but the spec says ", WorkloadKindName(spec.kind)));
  }
  for (const auto& [name, value] : spec.params) {
    bool known = false;
    for (const ParamInfo& param : def->info.params) known = known || param.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const ParamInfo& param : def->info.params) names.push_back(param.name);
      return absl::InvalidArgumentError(absl::StrCat("family '", spec.family,
                                                     "' has no parameter '", name,
                                                     "' (known: ", absl::StrJoin(names, ", "), ")"));
    }
  }
  WorkloadSpec out = spec;
  for (const ParamInfo& param : def->info.params) {
    auto it = out.params.find(param.name);
    if (it == out.params.end()) {
      out.params[param.name] = param.default_value;
    } else if (it->second < param.min_value || it->second > param.max_value) {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.family, ": parameter '", param.name, "' = ", it->second, " is out of range [",
          param.min_value, ", ", param.max_value, "]"));
    }
  }
  if (spec.batch_size < 1 || spec.batch_size > kMaxBatchSize) {
    return absl::InvalidArgumentError(absl::StrCat(spec.family, ": parameter 'batch_size' = ",
                                                   spec.batch_size, " is out of range [1, ",
                                                   kMaxBatchSize, "]"));
  }
  if (!def->uses_batch) out.batch_size = 1;
  if (!def->uses_precision) out.precision = Precision::kFp32;
  if (def->fixed_phase) out.phase = def->phase;
  if (out.phase == Phase::kTrain && out.optimizer != "adam" && out.optimizer != "adamw" &&
      out.optimizer != "sgd" && out.optimizer != "none") {
    return absl::InvalidArgumentError(absl::StrCat(spec.family, ": parameter 'optimizer' = '",
                                                   spec.optimizer,
                                                   "' (expected adam, adamw, sgd or none)"));
  }
  // Inference ignores the optimizer: a canonical value keeps equal work equal.
  if (out.phase == Phase::kInference) out.optimizer = "adam";
  RETURN_IF_ERROR(def->check(out));
  return out;
}

absl::StatusOr<WorkloadDescriptor> Describe(const WorkloadSpec& spec) {
  ASSIGN_OR_RETURN(WorkloadSpec normal, NormalizeSpec(spec));
  return FindDef(normal.family)->describe(normal);
}

}  // namespace perfcast::models

#include "models/workload.h"

#include <charconv>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace perfcast::models {
namespace {

constexpr std::pair<Precision, absl::string_view> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"},         {Precision::kTf32, "tf32"},
    {Precision::kFp16Amp, "fp16-amp"},  {Precision::kBf16Amp, "bf16-amp"},
    {Precision::kFp64, "fp64"},         {Precision::kFp8, "fp8"},
    {Precision::kInt8, "int8"},         {Precision::kStrictFp32, "strict-fp32"},
};

bool IsIdentifier(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::StatusOr<int64_t> ParseInt(absl::string_view text, absl::string_view what) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload key: ", what, " '", text, "' is not an integer"));
  }
  return value;
}

}  // namespace

absl::string_view PrecisionName(Precision precision) {
  for (const auto& [value, name] : kPrecisionNames) {
    if (value == precision) return name;
  }
  return "unknown";
}

bool IsMixedPrecision(Precision precision) {
  return precision == Precision::kFp16Amp || precision == Precision::kBf16Amp ||
         precision == Precision::kFp8 || precision == Precision::kInt8;
}

absl::string_view PhaseName(Phase phase) {
  return phase == Phase::kTrain ? "train" : "inference";
}

absl::string_view WorkloadKindName(WorkloadKind kind) {
  return kind == WorkloadKind::kModel ? "model" : "op";
}

absl::string_view LoopName(Loop loop) { return loop == Loop::kPython ? "python" : "cpp"; }

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fp16" || lower == "amp-fp16") return Precision::kFp16Amp;
  if (lower == "bf16" || lower == "amp-bf16") return Precision::kBf16Amp;
  for (const auto& [value, text] : kPrecisionNames) {
    if (text == lower) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown precision '", name,
      "' (expected fp32, tf32, strict-fp32, fp16-amp, bf16-amp, fp64, fp8 or int8)"));
}

absl::StatusOr<Phase> ParsePhase(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "train" || lower == "training") return Phase::kTrain;
  if (lower == "inference" || lower == "infer") return Phase::kInference;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown phase '", name, "' (expected train or inference)"));
}

absl::StatusOr<Loop> ParseLoop(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "python") return Loop::kPython;
  if (lower == "cpp" || lower == "c++" || lower == "libtorch") return Loop::kCpp;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown loop '", name, "' (expected python or cpp)"));
}

absl::StatusOr<WorkloadKind> ParseWorkloadKind(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "model") return WorkloadKind::kModel;
  if (lower == "op" || lower == "operation") return WorkloadKind::kOperation;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown workload kind '", name, "' (expected model or op)"));
}

std::string WorkloadSpec::Key() const {
  // Built in one string reserved up front: an import computes every record's
  // key, and growing the string append by append reallocated it two or three
  // times (docs/code-evidence.md, "Workload keys"). The bound: the kind,
  // precision and phase names and the
  // separators fit in 48 characters, an integer in 20 and its sign.
  std::string key;
  size_t bound = 48 + family.size() + optimizer.size() + 21;
  for (const auto& [name, value] : params) bound += name.size() + 23;
  key.reserve(bound);
  absl::StrAppend(&key, WorkloadKindName(kind), "/", family, "{");
  const char* separator = "";
  for (const auto& [name, value] : params) {
    absl::StrAppend(&key, separator, name, "=", value);
    separator = ",";
  }
  absl::StrAppend(&key, "}/b", batch_size, "/", PrecisionName(precision), "/", PhaseName(phase),
                  "/", phase == Phase::kTrain ? optimizer : "-");
  return key;
}

absl::StatusOr<WorkloadSpec> ParseWorkloadKey(absl::string_view key) {
  const size_t open = key.find('{');
  const size_t close = key.find('}');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    return absl::InvalidArgumentError(absl::StrCat("malformed workload key '", key, "'"));
  }
  WorkloadSpec spec;
  std::vector<absl::string_view> head = absl::StrSplit(key.substr(0, open), '/');
  if (head.size() != 2 || !IsIdentifier(head[1])) {
    return absl::InvalidArgumentError(absl::StrCat("malformed workload key '", key, "'"));
  }
  ASSIGN_OR_RETURN(spec.kind, ParseWorkloadKind(head[0]));
  spec.family = std::string(head[1]);
  absl::string_view body = key.substr(open + 1, close - open - 1);
  if (!body.empty()) {
    for (absl::string_view item : absl::StrSplit(body, ',')) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
      if (!IsIdentifier(kv.first)) {
        return absl::InvalidArgumentError(absl::StrCat("malformed parameter '", item, "'"));
      }
      ASSIGN_OR_RETURN(spec.params[std::string(kv.first)], ParseInt(kv.second, kv.first));
    }
  }
  std::vector<absl::string_view> tail = absl::StrSplit(key.substr(close + 1), '/');
  // tail: "", "b<batch>", precision, phase, optimizer
  if (tail.size() != 5 || !tail[0].empty() || tail[1].size() < 2 || tail[1][0] != 'b') {
    return absl::InvalidArgumentError(absl::StrCat("malformed workload key '", key, "'"));
  }
  ASSIGN_OR_RETURN(spec.batch_size, ParseInt(tail[1].substr(1), "batch"));
  ASSIGN_OR_RETURN(spec.precision, ParsePrecision(tail[2]));
  ASSIGN_OR_RETURN(spec.phase, ParsePhase(tail[3]));
  if (spec.phase == Phase::kTrain) {
    if (!IsIdentifier(tail[4])) {
      return absl::InvalidArgumentError(absl::StrCat("malformed optimizer in '", key, "'"));
    }
    spec.optimizer = std::string(tail[4]);
  }
  return spec;
}

}  // namespace perfcast::models

#include "profiler/collectives_plan.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace perfcast::profiler {
namespace {

constexpr int64_t kMinMessage = 4;  // one fp32 element
constexpr int64_t kMaxMessage = int64_t{1} << 36;

absl::StatusOr<int64_t> ParseSize(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  int64_t unit = 1;
  if (!text.empty()) {
    switch (absl::ascii_toupper(static_cast<unsigned char>(text.back()))) {
      case 'K':
        unit = int64_t{1} << 10;
        break;
      case 'M':
        unit = int64_t{1} << 20;
        break;
      case 'G':
        unit = int64_t{1} << 30;
        break;
      default:
        break;
    }
    if (unit != 1) text.remove_suffix(1);
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 1 || value > kMaxMessage / unit) {
    return absl::InvalidArgumentError(
        absl::StrCat("message size '", text, "' is not a count of bytes (K, M, G suffixes)"));
  }
  value *= unit;
  if (value < kMinMessage || value > kMaxMessage) {
    return absl::InvalidArgumentError(absl::StrCat("message size ", value, " is outside [",
                                                   kMinMessage, ", ", kMaxMessage, "] bytes"));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseMessageSizes(absl::string_view text) {
  std::vector<int64_t> sizes;
  if (text.find(':') != absl::string_view::npos) {
    std::vector<absl::string_view> ends = absl::StrSplit(text, ':');
    if (ends.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("message range '", text, "' is not FROM:TO"));
    }
    ASSIGN_OR_RETURN(int64_t from, ParseSize(ends[0]));
    ASSIGN_OR_RETURN(int64_t to, ParseSize(ends[1]));
    if (to < from) {
      return absl::InvalidArgumentError(
          absl::StrCat("message range '", text, "' ends below its start"));
    }
    for (int64_t size = from; size <= to; size *= 4) sizes.push_back(size);
    return sizes;
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    ASSIGN_OR_RETURN(int64_t size, ParseSize(part));
    sizes.push_back(size);
  }
  return sizes;
}

std::vector<models::WorkloadSpec> AllReduceSpecs(const std::vector<int64_t>& sizes, int gpus) {
  std::vector<models::WorkloadSpec> specs;
  for (int64_t bytes : sizes) {
    models::WorkloadSpec spec;
    spec.kind = models::WorkloadKind::kOperation;
    spec.family = "allreduce";
    spec.params = {{"bytes", bytes}, {"gpus", gpus}};
    spec.phase = models::Phase::kInference;
    specs.push_back(spec);
  }
  return specs;
}

int CallsPerBlock(int64_t bytes) {
  constexpr int64_t kBlockBytes = int64_t{1} << 30;
  return static_cast<int>(std::clamp<int64_t>(kBlockBytes / std::max<int64_t>(1, bytes), 5, 200));
}

std::vector<std::string> WorkerArgs(const std::vector<std::string>& base_args,
                                    const WorkerPlace& place) {
  std::vector<std::string> args = base_args;
  for (auto [flag, value] : {std::pair{"--rank", place.rank}, std::pair{"--world", place.world},
                             std::pair{"--port", place.port}}) {
    args.push_back(flag);
    args.push_back(absl::StrCat(value));
  }
  return args;
}

std::vector<std::pair<std::string, std::string>> WorkerEnvironment() {
  return {{"NCCL_NVLS_ENABLE", "0"}};
}

}  // namespace perfcast::profiler

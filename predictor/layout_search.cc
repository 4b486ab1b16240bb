#include "predictor/layout_search.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "models/hardware.h"

namespace perfcast::predictor {
namespace {

// Ascending.
std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

absl::StatusOr<int> ParseCount(absl::string_view part, absl::string_view text) {
  int count = 0;
  // SimpleAtoi takes a sign; a count is digits only.
  const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
  if (!digits || !absl::SimpleAtoi(part, &count)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpu-count '", text, "': '", part, "' is not a count (e.g. 8, 1-64 or 1,2,4,8)"));
  }
  if (count < 1 || count > models::kMaxGpusPerNode) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu-count '", text, "': ", count,
                                                   " is outside [1, ", models::kMaxGpusPerNode,
                                                   "]"));
  }
  return count;
}

}  // namespace

std::vector<ParallelLayout> EnumerateLayouts(const models::WorkloadSpec& spec,
                                             Framework framework, int gpus, int max_gpus) {
  std::vector<ParallelLayout> out;
  const absl::StatusOr<models::WorkloadSpec> normalized = models::NormalizeSpec(spec);
  if (gpus < 1 || spec.batch_size < 1 || !normalized.ok()) return out;
  for (int64_t t : Divisors(gpus)) {
    for (int64_t p : Divisors(gpus / t)) {
      const int64_t n = gpus / t / p;
      if (spec.batch_size % n != 0) continue;
      const std::vector<int64_t> micro_batches =
          p > 1 ? Divisors(spec.batch_size / n) : std::vector<int64_t>{1};
      for (int64_t m : micro_batches) {
        for (int zero = 0; zero <= (n > 1 ? 3 : 0); ++zero) {
          for (bool checkpointing : {false, true}) {
            const ParallelLayout layout{.data = static_cast<int>(n),
                                        .tensor = static_cast<int>(t),
                                        .pipeline = static_cast<int>(p),
                                        .micro_batches = static_cast<int>(m),
                                        .zero = zero,
                                        .framework = framework,
                                        .activation_checkpointing = checkpointing};
            if (ValidateNormalizedLayout(*normalized, layout, max_gpus).ok()) {
              out.push_back(layout);
            }
          }
        }
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<int>> ParseGpuCounts(absl::string_view text) {
  std::set<int> counts;
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError("--gpu-count: no count given (e.g. 8, 1-64 or 1,2,4,8)");
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    std::vector<absl::string_view> ends = absl::StrSplit(part, absl::MaxSplits('-', 1));
    ASSIGN_OR_RETURN(const int first, ParseCount(absl::StripAsciiWhitespace(ends[0]), text));
    int last = first;
    if (ends.size() == 2) {
      ASSIGN_OR_RETURN(last, ParseCount(absl::StripAsciiWhitespace(ends[1]), text));
      if (last < first) {
        return absl::InvalidArgumentError(absl::StrCat("--gpu-count '", text, "': the range ",
                                                       part, " ends below its start"));
      }
    }
    for (int count = first; count <= last; ++count) {
      counts.insert(count);
      if (counts.size() > static_cast<size_t>(kMaxGpuCounts)) {
        return absl::InvalidArgumentError(absl::StrCat("--gpu-count '", text, "': more than ",
                                                       kMaxGpuCounts, " GPU counts"));
      }
    }
  }
  return std::vector<int>(counts.begin(), counts.end());
}

}  // namespace perfcast::predictor

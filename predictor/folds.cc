#include "predictor/folds.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::predictor {
namespace {

absl::Status CheckK(int64_t n, int k) {
  if (k < 2 || k > n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot make ", k, " folds from ", n, " rows: need 2 <= folds <= rows"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> RandomFolds(int64_t n, int k, uint64_t seed) {
  RETURN_IF_ERROR(CheckK(n, k));
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Fisher–Yates with the engine's raw output: std::shuffle and the standard
  // distributions are not specified bit-for-bit across library vendors.
  std::mt19937_64 engine(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(engine() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  std::vector<int> folds(n);
  for (int64_t i = 0; i < n; ++i) folds[order[i]] = static_cast<int>(i % k);
  return folds;
}

absl::StatusOr<std::vector<int>> ContiguousFolds(int64_t n, int k) {
  RETURN_IF_ERROR(CheckK(n, k));
  std::vector<int> folds(n);
  int64_t row = 0;
  for (int f = 0; f < k; ++f) {
    const int64_t size = n / k + (f < n % k ? 1 : 0);
    for (int64_t i = 0; i < size; ++i) folds[row++] = f;
  }
  return folds;
}

absl::StatusOr<std::vector<int>> LeaveOneGroupOutFolds(absl::Span<const std::string> groups) {
  std::map<std::string, int> ids;
  for (const std::string& group : groups) ids.emplace(group, 0);
  if (ids.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "leave-one-group-out needs at least two groups, found ", ids.size()));
  }
  int next = 0;
  for (auto& [group, id] : ids) id = next++;
  std::vector<int> folds(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) folds[i] = ids[groups[i]];
  return folds;
}

absl::StatusOr<int> CountFolds(absl::Span<const int> fold_of_row) {
  int k = 0;
  for (int f : fold_of_row) {
    if (f < 0) return absl::InvalidArgumentError("fold ids must be >= 0");
    k = std::max(k, f + 1);
  }
  std::vector<int64_t> sizes(k, 0);
  for (int f : fold_of_row) ++sizes[f];
  for (int f = 0; f < k; ++f) {
    if (sizes[f] == 0) return absl::InvalidArgumentError(absl::StrCat("fold ", f, " has no rows"));
  }
  return k;
}

}  // namespace perfcast::predictor

// Fold assignments for cross-validation: a fold id in [0, k) per row.
//
// Grouped assignments keep every row of a group (a GPU model, an
// architecture, a workload family) in one fold, so that a cross-validated
// error measures how the model does on a group it has never seen: the
// question "how long on a GPU nobody here has?" is a leave-one-GPU-out one.
//
// Thread-safe: all functions are pure and deterministic.
#ifndef PERFCAST_PREDICTOR_FOLDS_H_
#define PERFCAST_PREDICTOR_FOLDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace perfcast::predictor {

// Shuffles rows (seeded, portable: the same on every platform) and deals them
// round-robin, so fold sizes differ by at most one. InvalidArgument unless
// 2 <= k <= n.
absl::StatusOr<std::vector<int>> RandomFolds(int64_t n, int k, uint64_t seed);

// Consecutive blocks, the first n % k of them one row longer: exactly
// scikit-learn's KFold(shuffle=False), for like-for-like comparisons.
// InvalidArgument unless 2 <= k <= n.
absl::StatusOr<std::vector<int>> ContiguousFolds(int64_t n, int k);

// Leave-one-group-out: one fold per distinct group, numbered in sorted group
// order. FailedPrecondition with fewer than two distinct groups.
absl::StatusOr<std::vector<int>> LeaveOneGroupOutFolds(
    absl::Span<const std::string> groups);

// Number of folds in an assignment (max id + 1); InvalidArgument when an id
// is negative or some fold in [0, max] has no rows.
absl::StatusOr<int> CountFolds(absl::Span<const int> fold_of_row);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_FOLDS_H_

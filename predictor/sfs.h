// Sequential forward selection (SFS) with cross-validated scoring, the
// feature-selection method of Lattuada et al. (Cluster Computing 2022).
//
// Starting from the forced features (or from nothing), each step tries every
// remaining candidate, keeps the one with the lowest cross-validated loss,
// and stops when the best addition improves the loss by less than
// `min_improvement` (relative) or the set reaches `max_features`. Candidates
// whose fit is singular on some fold are skipped. Ties go to the lowest
// column index, so the result is deterministic given the folds.
//
// All the work after CrossValidator::Create is independent of the number of
// rows except for MAPE scoring's one pass over held-out rows per candidate.
#ifndef PERFCAST_PREDICTOR_SFS_H_
#define PERFCAST_PREDICTOR_SFS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/cross_validation.h"

namespace perfcast::predictor {

struct SfsOptions {
  int max_features = 8;  // including forced ones
  // Relative decrease of the loss a feature must bring to be added. Negative:
  // always add up to max_features (scikit-learn's n_features_to_select).
  double min_improvement = 0.01;
  Scoring scoring = Scoring::kMape;
  // Columns selected first, in this order, whatever their score (e.g. level
  // 2's sum of level-1 predictions).
  std::vector<int> forced;
};

struct SfsResult {
  std::vector<int> selected;       // column indices, in order of selection
  std::vector<double> loss_path;   // loss after each selected column
  double baseline_loss = 0;        // the intercept-only model's loss
  double loss = 0;                 // final: loss_path.back() or the baseline
  int64_t candidate_fits = 0;      // subsets scored
};

// InvalidArgument for a forced column out of range or repeated, or
// max_features < forced.size(); FailedPrecondition when the forced set
// itself is singular.
absl::StatusOr<SfsResult> SelectForward(const CrossValidator& cv, const SfsOptions& options);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_SFS_H_

#include "predictor/sfs.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::predictor {

absl::StatusOr<SfsResult> SelectForward(const CrossValidator& cv, const SfsOptions& options) {
  const int p = cv.num_features();
  std::vector<bool> taken(p, false);
  for (int column : options.forced) {
    if (column < 0 || column >= p || taken[column]) {
      return absl::InvalidArgumentError(
          absl::StrCat("forced column ", column, " is out of range or repeated"));
    }
    taken[column] = true;
  }
  if (options.max_features < static_cast<int>(options.forced.size())) {
    return absl::InvalidArgumentError("max_features is smaller than the forced set");
  }

  SfsResult result;
  ASSIGN_OR_RETURN(double baseline, cv.Loss({}, options.scoring));
  result.baseline_loss = baseline;
  result.loss = baseline;
  ++result.candidate_fits;
  for (int column : options.forced) {
    result.selected.push_back(column);
    absl::StatusOr<double> loss = cv.Loss(result.selected, options.scoring);
    if (!loss.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("forced features cannot be fitted: ", loss.status().message()));
    }
    ++result.candidate_fits;
    result.loss_path.push_back(*loss);
    result.loss = *loss;
  }

  std::vector<int> trial = result.selected;
  while (static_cast<int>(result.selected.size()) < options.max_features) {
    int best_column = -1;
    double best_loss = 0;
    trial.push_back(-1);
    for (int j = 0; j < p; ++j) {
      if (taken[j]) continue;
      trial.back() = j;
      absl::StatusOr<double> loss = cv.Loss(trial, options.scoring);
      ++result.candidate_fits;
      if (!loss.ok()) continue;  // singular with this column: not a candidate
      if (best_column < 0 || *loss < best_loss) {
        best_column = j;
        best_loss = *loss;
      }
    }
    trial.pop_back();
    if (best_column < 0) break;
    if (options.min_improvement >= 0 &&
        !(best_loss < result.loss - options.min_improvement * std::abs(result.loss))) {
      break;
    }
    taken[best_column] = true;
    result.selected.push_back(best_column);
    trial.push_back(best_column);
    result.loss_path.push_back(best_loss);
    result.loss = best_loss;
  }
  return result;
}

}  // namespace perfcast::predictor

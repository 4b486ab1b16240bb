// Quantiles of a sample, the one definition every library uses (profile
// statistics, fitted models' error bands, comparisons and reports).
#ifndef PERFCAST_BASE_QUANTILE_H_
#define PERFCAST_BASE_QUANTILE_H_

#include "absl/types/span.h"

namespace perfcast {

// The q-quantile of `values`, interpolated linearly between the two closest
// order statistics (numpy's default, so that a reader recomputing a figure
// from the same values gets the same number): the median of {1, 2, 3, 4} is
// 2.5 and the 0.95-quantile of 1..20 is 19.05. `q` is clamped to [0, 1]. 0 for
// an empty input. Sorts a copy of `values`.
double Quantile(absl::Span<const double> values, double q);

// The same for `sorted`, already in ascending order (nothing is copied).
double SortedQuantile(absl::Span<const double> sorted, double q);

}  // namespace perfcast

#endif  // PERFCAST_BASE_QUANTILE_H_

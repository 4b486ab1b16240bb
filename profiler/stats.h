// Summary statistics of timed samples: what the agent stores as a profile's
// TimingStats and repeat_cv. Plain C++, no LibTorch.
#ifndef PERFCAST_PROFILER_STATS_H_
#define PERFCAST_PROFILER_STATS_H_

#include <vector>

#include "absl/types/span.h"
#include "base/quantile.h"
#include "models/profile.h"

namespace perfcast::profiler {

// Mean, median, p95, sample standard deviation (n - 1), min and max of
// `samples_ms`, with count = samples_ms.size(). Percentiles interpolate
// linearly between order statistics (numpy's default), so the median of
// {1, 2, 3, 4} is 2.5 and the p95 of 1..20 is 19.05. An empty input gives
// all-zero statistics with count 0; one sample has stddev 0.
models::TimingStats Summarize(absl::Span<const double> samples_ms);

// The q-quantile of `samples`: base/quantile.h's, which every library shares.
using ::perfcast::Quantile;

// Coefficient of variation: sample stddev / mean; 0 when there are fewer
// than two samples or the mean is not positive.
double CoefficientOfVariation(absl::Span<const double> samples);

// The estimated standard error of the median of `samples` relative to their
// mean: sqrt(pi/2) * CoefficientOfVariation / sqrt(n), the large-sample
// normal approximation (the median's error is 1.25 times the mean's). 0
// with fewer than two samples.
double MedianRelativeStandardError(absl::Span<const double> samples);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_STATS_H_

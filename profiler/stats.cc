#include "profiler/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace perfcast::profiler {
namespace {

double Mean(absl::Span<const double> samples) {
  return std::accumulate(samples.begin(), samples.end(), 0.0) /
         static_cast<double>(samples.size());
}

double SampleStddev(absl::Span<const double> samples, double mean) {
  if (samples.size() < 2) return 0;
  double sum_sq = 0;
  for (double x : samples) sum_sq += (x - mean) * (x - mean);
  return std::sqrt(sum_sq / static_cast<double>(samples.size() - 1));
}

}  // namespace

models::TimingStats Summarize(absl::Span<const double> samples_ms) {
  models::TimingStats stats;
  if (samples_ms.empty()) return stats;
  std::vector<double> sorted(samples_ms.begin(), samples_ms.end());
  std::sort(sorted.begin(), sorted.end());
  stats.count = static_cast<int64_t>(sorted.size());
  stats.mean_ms = Mean(sorted);
  stats.median_ms = SortedQuantile(sorted, 0.5);
  stats.p95_ms = SortedQuantile(sorted, 0.95);
  stats.stddev_ms = SampleStddev(sorted, stats.mean_ms);
  stats.min_ms = sorted.front();
  stats.max_ms = sorted.back();
  // Rounding in the mean of identical samples can leave it a hair outside
  // [min, max]; stored profiles must be consistent.
  stats.mean_ms = std::clamp(stats.mean_ms, stats.min_ms, stats.max_ms);
  return stats;
}

double CoefficientOfVariation(absl::Span<const double> samples) {
  if (samples.size() < 2) return 0;
  const double mean = Mean(samples);
  if (!(mean > 0)) return 0;
  return SampleStddev(samples, mean) / mean;
}

double MedianRelativeStandardError(absl::Span<const double> samples) {
  if (samples.size() < 2) return 0;
  constexpr double kMedianToMeanError = 1.2533141373155003;  // sqrt(pi / 2)
  return kMedianToMeanError * CoefficientOfVariation(samples) /
         std::sqrt(static_cast<double>(samples.size()));
}

}  // namespace perfcast::profiler

// The reproducibility benchmark: two runs of the same plan (two agent files
// or exports) compared configuration by configuration. What a user needs to
// know before trusting a fit: how far one measurement of a configuration is
// from the next one.
#ifndef PERFCAST_CLIENT_PROFILE_COMPARE_H_
#define PERFCAST_CLIENT_PROFILE_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/profile.h"

namespace perfcast::client {

struct CompareOptions {
  // Configurations whose headline step is shorter than this (the mean of the
  // two runs' medians) are left out: sub-millisecond steps are dominated by
  // launch jitter and say little about a training job.
  double min_ms = 1.0;
  // Matched configurations whose two profiles ran under host dispatch rates
  // (RunConditions::dispatch_ops_per_s) within this fraction of each other
  // also form the "host-matched" group: how well the measurement repeats
  // where the host was in the same state. A host-bound step follows its
  // host (a virtual machine's cores are shared with other tenants), so the
  // rest of the difference is the host's, which each profile records.
  double host_tolerance = 0.05;
};

// The relative differences (run b against run a) of one group of matched
// configurations, as fractions (0.02 is 2%).
struct DifferenceStats {
  std::string group;  // a family, or "all"
  int64_t n = 0;      // matched configurations with steps >= min_ms
  double median_abs = 0;
  double p90_abs = 0;
  double median_signed = 0;  // b slower than a is positive
};

struct CompareReport {
  std::vector<DifferenceStats> families;  // by family name; empty groups left out
  DifferenceStats overall;
  DifferenceStats host_matched;  // n = 0 where profiles carry no dispatch rates
  int64_t only_in_a = 0;  // workload keys one side lacks
  int64_t only_in_b = 0;
  int64_t below_min = 0;  // matched, but shorter than min_ms
};

// Matches the profiles of `a` and `b` by workload key (node names may differ:
// the runs may come from two machines) and compares their median iteration
// times. A key measured several times in one run counts with the median of
// its medians (and dispatch rates). InvalidArgument for a negative or
// non-finite min_ms or host_tolerance, or when no configuration matches at
// or above min_ms.
absl::StatusOr<CompareReport> CompareRuns(const std::vector<models::Profile>& a,
                                          const std::vector<models::Profile>& b,
                                          const CompareOptions& options);

// The report as one JSON object ({"min_ms":..., "overall":{...},
// "host_matched":{...}, "families":[...], "only_in_a":..., ...}), for
// `--output json`.
std::string CompareReportJson(const CompareReport& report, const CompareOptions& options);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_PROFILE_COMPARE_H_

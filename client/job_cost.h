// What a predicted job costs: its GPU-hours at a price table's rate, and
// whether the prices used are too old to trust. predict and its sweeps
// price with the shipped table (recommend's server does the same).
#ifndef PERFCAST_CLIENT_JOB_COST_H_
#define PERFCAST_CLIENT_JOB_COST_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "models/gpu_prices.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

struct JobCost {
  double usd = 0;
  double usd_low = 0;   // at the job time's 10th percentile
  double usd_high = 0;  // at its 90th
  int gpus = 1;
  models::GpuPrice price;
};

// The cost of `gpus` GPUs of `gpu_model` for `seconds` (low .. high);
// nullopt when `table` has no price for the model or no job time is given.
std::optional<JobCost> CostOfJob(const models::PriceTable& table, const std::string& gpu_model,
                                 int gpus, double seconds, double seconds_low,
                                 double seconds_high);

// The cost of a prediction's job (its GPUs: the layout's, else one) at the
// shipped prices; nullopt without a job size or a price for the GPU.
std::optional<JobCost> CostOfPrediction(const v1::PredictResponse& prediction);

// {"usd", "usd_low", "usd_high", "gpus", "usd_per_gpu_hour", "provider",
// "as_of", "kind"} for -o json|yaml|csv.
nlohmann::json CostJson(const JobCost& cost);

// "$12.34 ($11.02 .. $14.10) at $5.41/GPU-h x 8 GPUs (Lambda, as of 2024-12)".
std::string CostText(const JobCost& cost);

// Prices go stale: after this long, the answer says so.
inline constexpr absl::Duration kStalePriceAge = absl::Hours(24 * 183);

// True when `as_of` ("YYYY-MM" or "YYYY-MM-DD"; a month counts from its
// first day) is more than kStalePriceAge before `now`.
bool PriceIsStale(const std::string& as_of, absl::Time now);

// "prices older than six months (17 GPUs, as of 2024-06 to 2024-12)" (one
// GPU is named), or "" when every price in `used` is recent.
std::string StalePriceWarning(const std::vector<models::GpuPrice>& used, absl::Time now);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_JOB_COST_H_

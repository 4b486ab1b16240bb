#include "client/job_cost.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace perfcast::client {

std::optional<JobCost> CostOfJob(const models::PriceTable& table, const std::string& gpu_model,
                                 int gpus, double seconds, double seconds_low,
                                 double seconds_high) {
  const models::GpuPrice* price = table.Find(gpu_model);
  if (price == nullptr || !(seconds > 0)) return std::nullopt;
  const double per_second = price->usd_per_gpu_hour * gpus / 3600;
  return JobCost{.usd = seconds * per_second,
                 .usd_low = seconds_low * per_second,
                 .usd_high = seconds_high * per_second,
                 .gpus = gpus,
                 .price = *price};
}

std::optional<JobCost> CostOfPrediction(const v1::PredictResponse& p) {
  if (p.iterations() <= 0) return std::nullopt;
  const int gpus = p.has_parallel() ? std::max(1, p.parallel().gpus()) : 1;
  return CostOfJob(models::PriceTable::BuiltIn(), p.gpu_model(), gpus, p.job_seconds(),
                   p.job_seconds_low(), p.job_seconds_high());
}

nlohmann::json CostJson(const JobCost& cost) {
  return {{"usd", cost.usd},
          {"usd_low", cost.usd_low},
          {"usd_high", cost.usd_high},
          {"gpus", cost.gpus},
          {"usd_per_gpu_hour", cost.price.usd_per_gpu_hour},
          {"provider", cost.price.provider},
          {"as_of", cost.price.as_of},
          {"kind", cost.price.kind}};
}

std::string CostText(const JobCost& cost) {
  return absl::StrFormat("$%.2f ($%.2f .. $%.2f) at $%.2f/GPU-h x %d GPU%s (%s, %s, as of %s)",
                         cost.usd, cost.usd_low, cost.usd_high, cost.price.usd_per_gpu_hour,
                         cost.gpus, cost.gpus == 1 ? "" : "s", cost.price.provider,
                         cost.price.kind, cost.price.as_of);
}

bool PriceIsStale(const std::string& as_of, absl::Time now) {
  std::vector<std::string> parts = absl::StrSplit(as_of, '-');
  int year = 0, month = 0, day = 1;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &year) ||
      !absl::SimpleAtoi(parts[1], &month) ||
      (parts.size() > 2 && !absl::SimpleAtoi(parts[2], &day))) {
    return false;  // the table's own check refuses such dates
  }
  const absl::Time dated =
      absl::FromCivil(absl::CivilDay(year, month, day), absl::UTCTimeZone());
  return now - dated > kStalePriceAge;
}

std::string StalePriceWarning(const std::vector<models::GpuPrice>& used, absl::Time now) {
  std::set<std::string> gpus, dates;
  for (const models::GpuPrice& price : used) {
    if (!PriceIsStale(price.as_of, now)) continue;
    gpus.insert(price.gpu);
    dates.insert(price.as_of);
  }
  if (gpus.empty()) return "";
  const std::string when = dates.size() == 1
                               ? *dates.begin()
                               : absl::StrCat(*dates.begin(), " to ", *dates.rbegin());
  const std::string which =
      gpus.size() == 1 ? *gpus.begin() : absl::StrCat(gpus.size(), " GPUs");
  return absl::StrCat("prices older than six months (", which, ", as of ", when, ")");
}

}  // namespace perfcast::client

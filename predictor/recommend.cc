#include "predictor/recommend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perfcast::predictor {
namespace {

std::string Hours(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.0f s", seconds);
  if (seconds < 7200) return absl::StrFormat("%.1f min", seconds / 60);
  return absl::StrFormat("%.2f h", seconds / 3600);
}

double RankKey(const Recommendation& r, RankBy rank_by) {
  switch (rank_by) {
    case RankBy::kTime: return r.seconds;
    case RankBy::kCost: return r.price.has_value() ? r.cost_usd : HUGE_VAL;
    case RankBy::kEnergy: return r.power.watts > 0 ? r.energy_kwh : HUGE_VAL;
  }
  return r.seconds;
}


// Which of deadline and budget a step whose 90th-percentile time is
// `seconds_high` on `count` GPUs misses (kNone: neither).
Exclusion MissedLimit(double seconds_high, int count, const std::optional<models::GpuPrice>& price,
                      const RecommendOptions& options) {
  if (options.deadline_seconds > 0 && seconds_high > options.deadline_seconds) {
    return Exclusion::kDeadline;
  }
  if (options.budget_usd > 0 &&
      (!price.has_value() ||
       seconds_high * (count / 3600.0) * price->usd_per_gpu_hour > options.budget_usd)) {
    return Exclusion::kBudget;
  }
  return Exclusion::kNone;
}

// The step's job time, cost and energy with their intervals, and whether it
// meets the deadline and budget.
void Price(const PricedLayout& priced, double iterations, const RecommendOptions& options,
           Recommendation& r) {
  if (!priced.step.ok()) {
    r.exclusion = Exclusion::kNoPrediction;
    r.reason = std::string(priced.step.status().message());
    return;
  }
  r.predicted = true;
  r.step = **priced.step;
  r.seconds = iterations * r.step.iteration_ms / 1e3;
  r.seconds_low = iterations * r.step.lo_ms / 1e3;
  r.seconds_high = iterations * r.step.hi_ms / 1e3;
  r.meets_deadline = options.deadline_seconds == 0 || r.seconds_high <= options.deadline_seconds;
  const double gpu_hours = r.gpu_count / 3600.0;
  if (r.price.has_value()) {
    r.cost_usd = r.seconds * gpu_hours * r.price->usd_per_gpu_hour;
    r.cost_low_usd = r.seconds_low * gpu_hours * r.price->usd_per_gpu_hour;
    r.cost_high_usd = r.seconds_high * gpu_hours * r.price->usd_per_gpu_hour;
  }
  const double kw = r.power.watts / 1e3;
  r.energy_kwh = r.seconds * gpu_hours * kw;
  r.energy_low_kwh = r.seconds_low * gpu_hours * kw;
  r.energy_high_kwh = r.seconds_high * gpu_hours * kw;
  r.exclusion = MissedLimit(r.seconds_high, r.gpu_count, r.price, options);
  if (r.exclusion == Exclusion::kDeadline) {
    r.reason = absl::StrCat("90th-percentile time ", Hours(r.seconds_high),
                            " misses the deadline of ", Hours(options.deadline_seconds));
  } else if (r.exclusion == Exclusion::kBudget && !r.price.has_value()) {
    r.reason = absl::StrCat("no price for ", r.gpu, ": the budget cannot be checked");
  } else if (r.exclusion == Exclusion::kBudget) {
    r.reason = absl::StrFormat("90th-percentile cost $%.2f exceeds the budget of $%.2f",
                               r.cost_high_usd, options.budget_usd);
  }
}

// Recommended first, then the nearest misses.
int ExclusionOrder(Exclusion exclusion) {
  switch (exclusion) {
    case Exclusion::kNone: return 0;
    case Exclusion::kDeadline: return 1;
    case Exclusion::kBudget: return 2;
    case Exclusion::kMemory: return 3;
    case Exclusion::kNoPrediction: return 4;
  }
  return 4;
}

// Whether `a` ranks before `b`: recommended first, then the nearest misses
// (deadline, budget, memory, no prediction); within a group by the rank key,
// then time, then the memory a layout needs, then target, count and layout.
bool Before(const Recommendation& a, const Recommendation& b, RankBy rank_by) {
  if (a.exclusion != b.exclusion) {
    if (a.exclusion == Exclusion::kNone || b.exclusion == Exclusion::kNone) {
      return a.exclusion == Exclusion::kNone;
    }
    return ExclusionOrder(a.exclusion) < ExclusionOrder(b.exclusion);
  }
  const double ka = a.predicted ? RankKey(a, rank_by) : HUGE_VAL;
  const double kb = b.predicted ? RankKey(b, rank_by) : HUGE_VAL;
  if (ka != kb) return ka < kb;
  const double ta = a.predicted ? a.seconds : HUGE_VAL;
  const double tb = b.predicted ? b.seconds : HUGE_VAL;
  if (ta != tb) return ta < tb;
  if (a.memory.required_bytes != b.memory.required_bytes) {
    return a.memory.required_bytes < b.memory.required_bytes;
  }
  auto key = [](const Recommendation& r) {
    const ParallelLayout& l = r.layout;
    return std::make_tuple(r.target, r.gpu_count, l.tensor, l.pipeline, l.micro_batches, l.zero,
                           l.activation_checkpointing);
  };
  return key(a) < key(b);
}

}  // namespace

absl::string_view ExclusionName(Exclusion exclusion) {
  switch (exclusion) {
    case Exclusion::kNone: return "";
    case Exclusion::kMemory: return "memory";
    case Exclusion::kNoPrediction: return "no-prediction";
    case Exclusion::kDeadline: return "deadline";
    case Exclusion::kBudget: return "budget";
  }
  return "";
}

absl::StatusOr<RankBy> ParseRankBy(absl::string_view name) {
  if (name == "time") return RankBy::kTime;
  if (name == "cost") return RankBy::kCost;
  if (name == "energy") return RankBy::kEnergy;
  return absl::InvalidArgumentError(
      absl::StrCat("rank_by '", name, "' is not one of time, cost, energy"));
}

absl::StatusOr<std::vector<Recommendation>> Recommend(
    const models::WorkloadDescriptor& descriptor, const std::vector<Target>& targets,
    const LayoutSearch& search, const PowerModel& power, const models::PriceTable& prices,
    const RecommendOptions& options) {
  if (options.iterations < 1) {
    return absl::InvalidArgumentError("recommend: the job needs at least one iteration");
  }
  if (!std::isfinite(options.deadline_seconds) || options.deadline_seconds < 0) {
    return absl::InvalidArgumentError("recommend: deadline_seconds must be finite and >= 0");
  }
  if (!std::isfinite(options.budget_usd) || options.budget_usd < 0) {
    return absl::InvalidArgumentError("recommend: budget_usd must be finite and >= 0");
  }
  if (options.gpu_counts.empty()) {
    return absl::InvalidArgumentError("recommend: at least one GPU count is needed");
  }
  for (int count : options.gpu_counts) {
    if (count < 1 || count > models::kMaxGpusPerNode) {
      return absl::InvalidArgumentError(absl::StrCat(
          "recommend: GPU count ", count, " is outside [1, ", models::kMaxGpusPerNode, "]"));
    }
  }
  const double iterations = static_cast<double>(options.iterations);
  std::vector<Recommendation> out;
  for (const Target& target : targets) {
    const PowerEstimate watts = EstimatePower(power, descriptor.spec, target.node.gpu);
    const models::GpuPrice* price = prices.Find(target.node.gpu.model);
    for (int count : options.gpu_counts) {
      Recommendation base;
      base.target = target.node.name;
      base.gpu = target.node.gpu.model;
      base.registered = target.registered;
      base.gpu_count = count;
      base.layout.data = count;
      base.power = watts;
      if (price != nullptr) base.price = *price;
      if (target.registered && count > target.node.gpu_count) {
        base.exclusion = Exclusion::kNoPrediction;
        base.reason = absl::StrCat("node ", target.node.name, " has ", target.node.gpu_count,
                                   " GPU(s), not ", count);
        out.push_back(std::move(base));
        continue;
      }
      absl::StatusOr<std::vector<PricedLayout>> layouts = search(target.node, count);
      if (!layouts.ok() || layouts->empty()) {
        base.exclusion = Exclusion::kNoPrediction;
        base.reason = layouts.ok() ? absl::StrCat("no layout of ", count, " GPUs runs the job")
                                   : std::string(layouts.status().message());
        out.push_back(std::move(base));
        continue;
      }
      // Among one target and count every rank key (time, cost, energy) grows
      // with the step's time and the exclusions with its 90th percentile, so
      // the best layout is found from the step alone; all_layouts keeps every
      // one that fits.
      const PricedLayout* best = nullptr;
      std::tuple<int, double, double> best_key;
      std::optional<Recommendation> nearest;  // to fitting, when none does
      size_t fitting = 0;
      for (const PricedLayout& priced : *layouts) {
        const MemoryVerdict verdict = CheckMemoryFit(priced.memory, target.node.gpu);
        if (!verdict.fits) {
          if (fitting == 0 &&
              (!nearest.has_value() ||
               priced.memory.required_bytes < nearest->memory.required_bytes)) {
            Recommendation& r = nearest.emplace(base);
            r.layout = priced.layout;
            r.memory = priced.memory;
            r.memory_verdict = verdict;
            r.exclusion = Exclusion::kMemory;
            r.reason = layouts->size() == 1
                           ? verdict.reason
                           : absl::StrCat("no layout fits; the nearest, ", LayoutName(r.layout),
                                          ", ", verdict.reason);
          }
          continue;
        }
        ++fitting;
        if (options.all_layouts) {
          Recommendation& r = out.emplace_back(base);
          r.layout = priced.layout;
          r.memory = priced.memory;
          r.memory_verdict = verdict;
          Price(priced, iterations, options, r);
          continue;
        }
        // Unpriced layouts rank after priced ones, as Before has it; among
        // them the first (the plainest) stands for the count.
        const std::tuple<int, double, double> key =
            priced.step.ok()
                ? std::make_tuple(
                      ExclusionOrder(MissedLimit(iterations * (*priced.step)->hi_ms / 1e3, count,
                                                 base.price, options)),
                      (*priced.step)->iteration_ms, priced.memory.required_bytes)
                : std::make_tuple(ExclusionOrder(Exclusion::kNoPrediction), HUGE_VAL, 0.0);
        if (best == nullptr || key < best_key) {
          best = &priced;
          best_key = key;
        }
      }
      if (fitting == 0) {
        out.push_back(*std::move(nearest));
      } else if (best != nullptr) {
        Recommendation& r = out.emplace_back(base);
        r.layout = best->layout;
        r.memory = best->memory;
        r.memory_verdict = CheckMemoryFit(best->memory, target.node.gpu);
        Price(*best, iterations, options, r);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [rank_by = options.rank_by](const Recommendation& a, const Recommendation& b) {
                     return Before(a, b, rank_by);
                   });
  return out;
}
}  // namespace perfcast::predictor

#include "predictor/recommend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "predictor/layout_memory.h"

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
    const StepPredictor& predict_step, const MemoryModel& memory, const PowerModel& power,
    const models::PriceTable& prices, const RecommendOptions& options) {
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
  // Each count's share of the batch, and the memory it needs per GPU.
  struct Share {
    absl::Status status;  // why this count cannot split the batch
    MemoryEstimate memory;
  };
  std::map<int, Share> shares;
  for (int count : options.gpu_counts) {
    Share& share = shares[count];
    const int64_t batch = descriptor.spec.batch_size;
    if (count == 1) {
      share.memory = EstimateMemory(memory, descriptor);
      continue;
    }
    if (batch % count != 0) {
      share.status = absl::InvalidArgumentError(absl::StrCat(
          "a batch of ", batch, " does not split evenly over ", count, " data-parallel GPUs"));
      continue;
    }
    models::WorkloadSpec replica = descriptor.spec;
    replica.batch_size = batch / count;
    absl::StatusOr<models::WorkloadDescriptor> described = models::Describe(replica);
    if (!described.ok()) {
      share.status = described.status();
      continue;
    }
    // The layout memory model's answer, as Predict refuses it: the
    // replica's peak plus what data parallelism adds (DDP's buckets).
    const MemoryEstimate replica_memory = EstimateMemory(memory, *described);
    const LayoutMemory layout_memory =
        EstimateLayoutMemory(memory, *described, ParallelLayout{.data = count});
    share.memory = replica_memory;
    const double scale = replica_memory.peak_bytes > 0
                             ? layout_memory.allocated() / replica_memory.peak_bytes
                             : 1.0;
    share.memory.peak_bytes = layout_memory.allocated();
    share.memory.low_bytes *= scale;
    share.memory.high_bytes *= scale;
    share.memory.required_bytes = layout_memory.required();
  }
  const double iterations = static_cast<double>(options.iterations);
  std::vector<Recommendation> out;
  for (const Target& target : targets) {
    const PowerEstimate watts = EstimatePower(power, descriptor.spec, target.node.gpu);
    const models::GpuPrice* price = prices.Find(target.node.gpu.model);
    for (int count : options.gpu_counts) {
      Recommendation r;
      r.target = target.node.name;
      r.gpu = target.node.gpu.model;
      r.registered = target.registered;
      r.gpu_count = count;
      r.power = watts;
      if (price != nullptr) r.price = *price;
      if (target.registered && count > target.node.gpu_count) {
        r.exclusion = Exclusion::kNoPrediction;
        r.reason = absl::StrCat("node ", target.node.name, " has ", target.node.gpu_count,
                                " GPU(s), not ", count);
        out.push_back(std::move(r));
        continue;
      }
      const Share& share = shares.at(count);
      if (!share.status.ok()) {
        r.exclusion = Exclusion::kNoPrediction;
        r.reason = std::string(share.status.message());
        out.push_back(std::move(r));
        continue;
      }
      r.memory = share.memory;
      r.memory_verdict = CheckMemoryFit(share.memory, target.node.gpu);
      if (!r.memory_verdict.fits) {
        r.exclusion = Exclusion::kMemory;
        r.reason = r.memory_verdict.reason;
        out.push_back(std::move(r));
        continue;
      }
      absl::StatusOr<Prediction> step = predict_step(target.node, count);
      if (!step.ok()) {
        r.exclusion = Exclusion::kNoPrediction;
        r.reason = std::string(step.status().message());
        out.push_back(std::move(r));
        continue;
      }
      r.predicted = true;
      r.step = *std::move(step);
      r.seconds = iterations * r.step.iteration_ms / 1e3;
      r.seconds_low = iterations * r.step.lo_ms / 1e3;
      r.seconds_high = iterations * r.step.hi_ms / 1e3;
      r.meets_deadline = options.deadline_seconds == 0 || r.seconds_high <= options.deadline_seconds;
      const double gpu_hours = count / 3600.0;
      if (price != nullptr) {
        r.cost_usd = r.seconds * gpu_hours * price->usd_per_gpu_hour;
        r.cost_low_usd = r.seconds_low * gpu_hours * price->usd_per_gpu_hour;
        r.cost_high_usd = r.seconds_high * gpu_hours * price->usd_per_gpu_hour;
      }
      const double kw = watts.watts / 1e3;
      r.energy_kwh = r.seconds * gpu_hours * kw;
      r.energy_low_kwh = r.seconds_low * gpu_hours * kw;
      r.energy_high_kwh = r.seconds_high * gpu_hours * kw;
      if (!r.meets_deadline) {
        r.exclusion = Exclusion::kDeadline;
        r.reason = absl::StrCat("90th-percentile time ", Hours(r.seconds_high),
                                " misses the deadline of ", Hours(options.deadline_seconds));
      } else if (options.budget_usd > 0 && price == nullptr) {
        r.exclusion = Exclusion::kBudget;
        r.reason = absl::StrCat("no price for ", r.gpu, ": the budget cannot be checked");
      } else if (options.budget_usd > 0 && r.cost_high_usd > options.budget_usd) {
        r.exclusion = Exclusion::kBudget;
        r.reason = absl::StrFormat("90th-percentile cost $%.2f exceeds the budget of $%.2f",
                                   r.cost_high_usd, options.budget_usd);
      }
      out.push_back(std::move(r));
    }
  }
  const RankBy rank_by = options.rank_by;
  std::stable_sort(out.begin(), out.end(), [rank_by](const Recommendation& a, const Recommendation& b) {
    if (a.exclusion != b.exclusion) {
      if (a.exclusion == Exclusion::kNone || b.exclusion == Exclusion::kNone) {
        return a.exclusion == Exclusion::kNone;
      }
      // Excluded: the nearest misses (deadline, budget) before the others.
      auto order = [](Exclusion e) {
        switch (e) {
          case Exclusion::kDeadline: return 1;
          case Exclusion::kBudget: return 2;
          case Exclusion::kMemory: return 3;
          default: return 4;
        }
      };
      return order(a.exclusion) < order(b.exclusion);
    }
    const double ka = a.predicted ? RankKey(a, rank_by) : HUGE_VAL;
    const double kb = b.predicted ? RankKey(b, rank_by) : HUGE_VAL;
    if (ka != kb) return ka < kb;
    const double ta = a.predicted ? a.seconds : HUGE_VAL;
    const double tb = b.predicted ? b.seconds : HUGE_VAL;
    return std::tie(ta, a.target, a.gpu_count) < std::tie(tb, b.target, b.gpu_count);
  });
  return out;
}

}  // namespace perfcast::predictor

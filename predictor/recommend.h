// Recommendation: from per-GPU predictions to a decision. For one job, ranks
// candidate targets (catalog GPUs and registered nodes, each at one or more
// GPU counts, each count in the layouts a search gives) by predicted job time, cost and energy, each with its interval,
// and says which meet a deadline and a budget with >= 90% confidence and why
// the others are excluded (the job does not fit in memory, no prediction,
// too slow, too dear).
//
// Confidence comes from the prediction's band: its high end is the 90th
// percentile of the cross-validated error distribution, so a job whose high
// end meets the deadline does so with at least 90% confidence. Cost is the
// price per GPU-hour × GPUs × hours; energy is hours × GPUs × predicted board
// power (see power.h).
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_RECOMMEND_H_
#define PERFCAST_PREDICTOR_RECOMMEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/descriptor.h"
#include "models/gpu_prices.h"
#include "models/hardware.h"
#include "predictor/layout.h"
#include "predictor/memory.h"
#include "predictor/power.h"
#include "predictor/predictor.h"

namespace perfcast::predictor {

// Why a candidate is not recommended. In this order of precedence.
enum class Exclusion {
  kNone,
  kMemory,        // the step does not fit in the GPU's memory
  kNoPrediction,  // the model cannot price it (or more GPUs than the node has)
  kDeadline,      // its 90th-percentile time misses the deadline
  kBudget,        // its 90th-percentile cost exceeds the budget, or it has no price
};
// "", "memory", "no-prediction", "deadline", "budget".
absl::string_view ExclusionName(Exclusion exclusion);

enum class RankBy { kTime, kCost, kEnergy };
// "time", "cost", "energy"; InvalidArgument otherwise.
absl::StatusOr<RankBy> ParseRankBy(absl::string_view name);

struct RecommendOptions {
  int64_t iterations = 0;          // of the whole job, > 0
  double deadline_seconds = 0;     // 0: none
  double budget_usd = 0;           // 0: none
  std::vector<int> gpu_counts = {1};
  RankBy rank_by = RankBy::kCost;
  // Every layout that fits, each its own candidate; otherwise the best
  // layout of each target and count.
  bool all_layouts = false;
};

// A target to consider: a registered node (its own GPU count caps the
// counts) or a catalog GPU (any count).
struct Target {
  models::Node node;
  bool registered = false;
};

// One layout of the job on a candidate's GPUs: its memory per GPU and,
// when that fits, its step.
struct PricedLayout {
  ParallelLayout layout;
  MemoryEstimate memory;  // per GPU
  // Per step (shared: a search's answers are priced once and not copied);
  // an error saying why when the layout was not priced.
  absl::StatusOr<std::shared_ptr<const Prediction>> step =
      absl::FailedPreconditionError("not priced");
};

// Lays the job out on `count` GPUs of `node` in every layout the search
// considers (a single-GPU step for one plain GPU), each with its memory per
// GPU and, where it fits, its priced step. An error says why no layout of
// that count can run the job (e.g. the batch does not split over it).
using LayoutSearch = std::function<absl::StatusOr<std::vector<PricedLayout>>(
    const models::Node& node, int count)>;

struct Recommendation {
  std::string target;  // node name, or "catalog:<GPU>"
  std::string gpu;     // GPU model
  bool registered = false;
  int gpu_count = 1;
  ParallelLayout layout;  // how the job runs on gpu_count GPUs
  Exclusion exclusion = Exclusion::kNone;
  std::string reason;  // why excluded, for people; empty when recommended

  MemoryEstimate memory;
  MemoryVerdict memory_verdict;

  bool predicted = false;  // the fields below are set
  Prediction step;         // per-iteration prediction
  double seconds = 0, seconds_low = 0, seconds_high = 0;
  bool meets_deadline = false;  // seconds_high <= deadline (no deadline: true)

  std::optional<models::GpuPrice> price;
  double cost_usd = 0, cost_low_usd = 0, cost_high_usd = 0;  // 0 without a price

  PowerEstimate power;  // per GPU
  double energy_kwh = 0, energy_low_kwh = 0, energy_high_kwh = 0;
};

// Ranks every (target, count) by its best layout (with
// options.all_layouts: every layout that fits). The search gives each
// count's layouts and their memory; a layout that does not fit on the GPU
// is dropped, and a count none of whose layouts fits is listed once as
// excluded by memory, with the layout nearest to fitting. Layouts are never
// dropped for being slow or dear: every one that fits is priced and ranked.
// Recommended candidates come first, ordered by `rank_by` (ties, and
// candidates without a price or power, by time); excluded ones follow, the
// near misses first (deadline, budget, then memory, no prediction), each
// group ordered as above. InvalidArgument for iterations < 1, a negative or
// non-finite deadline or budget, no counts or a count outside [1,
// models::kMaxGpusPerNode].
absl::StatusOr<std::vector<Recommendation>> Recommend(
    const models::WorkloadDescriptor& descriptor, const std::vector<Target>& targets,
    const LayoutSearch& search, const PowerModel& power, const models::PriceTable& prices,
    const RecommendOptions& options);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_RECOMMEND_H_

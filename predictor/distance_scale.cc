#include "predictor/distance_scale.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/quantile.h"
#include "predictor/distance.h"
#include "predictor/prediction_parts.h"

namespace perfcast::predictor {
namespace {

// The share of held-out rows an honest band covers.
constexpr double kTargetCoverage = 0.8;
// Bisection steps: the scale to within kMaxDistanceScale / 2^30.
constexpr int kBisections = 30;

// The answers of `model` on the rows of `data` (its features looked up by
// name), in row order; empty when `data` lacks one of them.
std::vector<double> PredictRows(const FittedModel& model, const Dataset& data) {
  std::vector<Eigen::Index> columns;
  for (const std::string& feature : model.features) {
    auto it = std::find(data.feature_names.begin(), data.feature_names.end(), feature);
    if (it == data.feature_names.end()) return {};
    columns.push_back(it - data.feature_names.begin());
  }
  std::vector<double> answers;
  std::vector<double> x(columns.size());
  for (Eigen::Index i = 0; i < data.x.rows(); ++i) {
    for (size_t j = 0; j < columns.size(); ++j) x[j] = data.x(i, columns[j]);
    answers.push_back(model.fit.Predict(x));
  }
  return answers;
}

// Whether row `row` of `data` is bound by memory (its memory time above its
// math time, as PricingPlan chooses a band); false without those columns.
bool MemoryBoundRow(const Dataset& data, Eigen::Index row) {
  for (const auto& [compute, memory] :
       {std::pair{"compute_ms", "memory_ms"}, std::pair{"tile_compute_ms", "tile_memory_ms"}}) {
    auto c = std::find(data.feature_names.begin(), data.feature_names.end(), compute);
    auto m = std::find(data.feature_names.begin(), data.feature_names.end(), memory);
    if (c == data.feature_names.end() || m == data.feature_names.end()) continue;
    return data.x(row, m - data.feature_names.begin()) >
           data.x(row, c - data.feature_names.begin());
  }
  return false;
}

// Each row of `measured` (a fold's rows at the fit's rates) where `keep`
// holds and `transfer` has its leave-one-GPU-out error, as far off as
// `model`'s answer is at the fold's held-out rates (`held_out`, the same
// rows), appended to `misses`, a level-1 fold's rows sharing one weight.
// Nothing when the two disagree in rows or lack the model's features.
void AddMisses(const FittedModel& model, const HeldOutArchitecture& fold, const Dataset& measured,
               const Dataset& held_out, const ErrorsByProfile& transfer,
               absl::FunctionRef<bool(const RowInfo&)> keep, std::vector<HeldOutMiss>& misses) {
  if (measured.y.size() != held_out.y.size()) return;
  const std::vector<double> at_measured = PredictRows(model, measured);
  const std::vector<double> at_held_out = PredictRows(model, held_out);
  if (at_measured.size() != at_held_out.size()) return;
  const size_t first = misses.size();
  for (size_t i = 0; i < at_measured.size(); ++i) {
    const RowInfo& info = held_out.info[i];
    if (!keep(info) || !(at_measured[i] > 0) || !(at_held_out[i] > 0)) continue;
    auto error = transfer.find(fold.profile_ids[info.profile_index]);
    if (error == transfer.end() || !(error->second > -1)) continue;
    misses.push_back({-std::log1p(error->second) - std::log(at_held_out[i] / at_measured[i]),
                      fold.spread[MemoryBoundRow(held_out, static_cast<Eigen::Index>(i))],
                      model.level == 1 ? info.load_regime : LoadWidth::kAny});
  }
  if (model.level != 1) return;
  const size_t added = misses.size() - first;
  for (size_t i = first; i < misses.size(); ++i) misses[i].weight = 1.0 / added;
}

// Whether `misses` hold a row CalibrateDistanceScale can learn from.
bool Calibrates(absl::Span<const HeldOutMiss> misses) {
  return std::any_of(misses.begin(), misses.end(), [](const HeldOutMiss& miss) {
    return miss.spread > 0 && miss.weight > 0 && std::isfinite(miss.log_miss);
  });
}

}  // namespace

double CalibrateDistanceScale(const FittedModel& model, absl::Span<const HeldOutMiss> misses) {
  struct Row {
    double weight;
    double log_miss;
    double spread;
    double below;  // the band without the spread: log(answer / lo)
    double above;  // log(hi / answer)
  };
  // An empty GPU name is one the model never saw, priced from its spec sheet.
  const internal::Target target{"", true};
  std::map<LoadWidth, internal::BandFactors> bands;
  std::vector<Row> rows;
  double total = 0;
  for (const HeldOutMiss& miss : misses) {
    if (!(miss.spread > 0) || !(miss.weight > 0) || !std::isfinite(miss.log_miss)) continue;
    auto band = bands.find(miss.width);
    if (band == bands.end()) {
      band = bands.emplace(miss.width, internal::BandFor(model, target, 0, miss.width)).first;
    }
    rows.push_back({miss.weight, miss.log_miss, miss.spread, -std::log(band->second.lo),
                    std::log(band->second.hi)});
    total += miss.weight;
  }
  if (rows.empty()) return 1;
  auto coverage = [&](double scale) {
    double covered = 0;
    for (const Row& row : rows) {
      const double spread = internal::kBandZ90 * scale * row.spread;
      if (row.log_miss >= -std::hypot(row.below, spread) &&
          row.log_miss <= std::hypot(row.above, spread)) {
        covered += row.weight;
      }
    }
    return covered / total;
  };
  if (coverage(0) >= kTargetCoverage) return 0;
  if (coverage(kMaxDistanceScale) < kTargetCoverage) return kMaxDistanceScale;
  double lo = 0, hi = kMaxDistanceScale;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = 0.5 * (lo + hi);
    (coverage(mid) >= kTargetCoverage ? hi : lo) = mid;
  }
  return hi;
}

std::vector<HeldOutArchitecture> HeldOutArchitectures(
    absl::Span<const DescribedProfile> profiles,
    const std::map<std::string, models::Node>& given_nodes,
    absl::Span<const models::Node* const> node_list, const PredictorModel& model) {
  std::map<std::string, std::vector<const models::Node*>> by_architecture;
  for (const models::Node* node : node_list) {
    if (!node->gpu.architecture.empty()) by_architecture[node->gpu.architecture].push_back(node);
  }
  std::vector<HeldOutArchitecture> folds;
  if (by_architecture.size() < 2) return folds;
  for (const auto& [architecture, members] : by_architecture) {
    HeldOutArchitecture fold;
    fold.architecture = architecture;
    std::vector<const models::Node*> others;
    for (const models::Node* node : node_list) {
      if (node->gpu.architecture != architecture) others.push_back(node);
    }
    fold.efficiencies = LearnEfficiencies(others);
    // Seen or new against the other nodes, as the fit without the
    // architecture would tell.
    Distance distance;
    distance.architecture_seen = Seen::kNew;
    auto seen_among_others = [&](DistanceKind kind, const models::Node& node) {
      const std::string group = DistanceGroup(node.gpu, kind);
      if (group.empty()) return Seen::kUnknown;
      return std::any_of(others.begin(), others.end(),
                         [&](const models::Node* o) { return DistanceGroup(o->gpu, kind) == group; })
                 ? Seen::kSeen
                 : Seen::kNew;
    };
    distance.vendor_seen = seen_among_others(DistanceKind::kVendor, *members.front());
    distance.power_class_seen = seen_among_others(DistanceKind::kPowerClass, *members.front());
    for (bool memory_bound : {false, true}) {
      fold.spread[memory_bound] = DistanceSpread(model, memory_bound, distance);
    }
    for (const models::Node* node : members) {
      auto given = given_nodes.find(node->name);
      if (given == given_nodes.end()) continue;
      models::Node bare = given->second;
      bare.measured = models::MeasuredRates();
      fold.nodes[node->name] = std::move(bare);
    }
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (!fold.nodes.contains(profiles[i].profile.node_name)) continue;
      fold.profiles.push_back(profiles[i]);
      fold.profile_ids.push_back(i);
    }
    folds.push_back(std::move(fold));
  }
  return folds;
}

void CalibrateLevel1Scales(absl::Span<const HeldOutArchitecture> folds,
                           const std::map<std::string, models::Node>& nodes,
                           const std::map<models::OpClass, ErrorsByProfile>& transfer,
                           PredictorModel& model) {
  std::map<models::OpClass, std::vector<HeldOutMiss>> misses;
  for (const HeldOutArchitecture& fold : folds) {
    absl::StatusOr<std::map<models::OpClass, Dataset>> measured =
        BuildOperationDatasets(fold.profiles, nodes, model.efficiencies);
    absl::StatusOr<std::map<models::OpClass, Dataset>> held_out =
        BuildOperationDatasets(fold.profiles, fold.nodes, fold.efficiencies);
    if (!measured.ok() || !held_out.ok()) continue;
    for (const auto& [op_class, fitted] : model.level1) {
      auto m = measured->find(op_class);
      auto h = held_out->find(op_class);
      auto errors = transfer.find(op_class);
      if (m == measured->end() || h == held_out->end() || errors == transfer.end()) continue;
      AddMisses(fitted, fold, m->second, h->second, errors->second,
                [](const RowInfo&) { return true; }, misses[op_class]);
    }
  }
  for (auto& [op_class, fitted] : model.level1) {
    fitted.distance_scale = CalibrateDistanceScale(fitted, misses[op_class]);
  }
}

void CalibrateLevel2Scales(absl::Span<const HeldOutArchitecture> folds,
                           const std::map<std::string, models::Node>& nodes, models::Phase phase,
                           const Level1Fn& level1, const ErrorsByProfile& global_transfer,
                           const std::map<std::string, ErrorsByProfile>& family_transfer,
                           PredictorModel& model, std::vector<FittedModel*>& unlearned) {
  std::vector<FittedModel*> fitted;
  std::vector<std::string> families;  // empty: the global model
  std::vector<const ErrorsByProfile*> transfer;
  if (auto global = model.level2.find(phase); global != model.level2.end()) {
    fitted.push_back(&global->second);
    families.emplace_back();
    transfer.push_back(&global_transfer);
  }
  const std::string suffix = absl::StrCat("/", models::PhaseName(phase));
  for (auto& [scope, family_model] : model.level2_by_family) {
    auto errors = family_transfer.find(scope);
    if (!absl::EndsWith(scope, suffix) || errors == family_transfer.end()) continue;
    fitted.push_back(&family_model);
    families.push_back(scope.substr(0, scope.size() - suffix.size()));
    transfer.push_back(&errors->second);
  }
  std::vector<std::vector<HeldOutMiss>> misses(fitted.size());
  for (const HeldOutArchitecture& fold : folds) {
    absl::StatusOr<Dataset> measured =
        BuildWorkloadDataset(fold.profiles, nodes, model.efficiencies, phase, level1);
    absl::StatusOr<Dataset> held_out =
        BuildWorkloadDataset(fold.profiles, fold.nodes, fold.efficiencies, phase, level1);
    if (!measured.ok() || !held_out.ok()) continue;
    for (size_t m = 0; m < fitted.size(); ++m) {
      AddMisses(
          *fitted[m], fold, *measured, *held_out, *transfer[m],
          [&](const RowInfo& info) { return families[m].empty() || info.family == families[m]; },
          misses[m]);
    }
  }
  for (size_t m = 0; m < fitted.size(); ++m) {
    fitted[m]->distance_scale = CalibrateDistanceScale(*fitted[m], misses[m]);
    if (!Calibrates(misses[m])) unlearned.push_back(fitted[m]);
  }
}

void ShareLevel2Scale(const PredictorModel& model, absl::Span<FittedModel* const> unlearned) {
  std::vector<double> learned;
  auto add = [&](const FittedModel& fitted) {
    if (std::find(unlearned.begin(), unlearned.end(), &fitted) == unlearned.end()) {
      learned.push_back(fitted.distance_scale);
    }
  };
  for (const auto& [phase, fitted] : model.level2) add(fitted);
  for (const auto& [scope, fitted] : model.level2_by_family) add(fitted);
  if (learned.empty()) return;
  const double median = Quantile(learned, 0.5);
  for (FittedModel* fitted : unlearned) fitted->distance_scale = median;
}

}  // namespace perfcast::predictor

// How much of the distance spread (distance.h) a model's band carries for a
// GPU priced from its spec sheet, learned at fit time on leave-one-
// architecture-out folds of the training GPUs: each architecture's own rows
// priced at the rates a new architecture gets (its measured rates dropped,
// the efficiencies learned without it), each row's leave-one-GPU-out answer
// moved by what those rates change in the model's answer, and the spread
// scaled until the bands cover 80% of those rows.
//
// A kernel's time follows its rate's error almost fully; a whole step's
// less (level 2's terms absorb part of it), so one scale cannot serve both
// levels (docs/transfer-validation.md, "Item 6").
//
// Internal to perfcast_predictor. Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_DISTANCE_SCALE_H_
#define PERFCAST_PREDICTOR_DISTANCE_SCALE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "models/hardware.h"
#include "predictor/dataset.h"
#include "predictor/model.h"

namespace perfcast::predictor {

// One training row seen as a held-out architecture's.
struct HeldOutMiss {
  // log(measured / answer): the row's leave-one-GPU-out answer moved by what
  // the held-out rates change in the model's answer.
  double log_miss = 0;
  // The spread (DistanceSpread) of the row's binding rate on a target as
  // far as the fold's architecture.
  double spread = 0;
  LoadWidth width = LoadWidth::kAny;
  // What the row counts for in the coverage: at level 1 each architecture's
  // rows share one (a kernel collection's size is how its GPU happened to be
  // profiled: one GPU's can outnumber an architecture's), at level 2 each
  // row has its own (a handful per GPU).
  double weight = 1;
};

// Largest scale CalibrateDistanceScale returns: a spread four times its
// measured size already covers any rate error the folds can show.
inline constexpr double kMaxDistanceScale = 4;

// The distance scale (FittedModel::distance_scale) at which `model`'s bands
// for a spec-sheet GPU it never saw (BandFor: its leave-one-GPU-out errors
// of the row's load regime with the scaled spread in quadrature) cover 80%
// of the rows `misses` by weight: the least such scale in
// [0, kMaxDistanceScale] (coverage grows with it). 1 (the spread as
// measured) when no row has a spread.
double CalibrateDistanceScale(const FittedModel& model, absl::Span<const HeldOutMiss> misses);

// Each row's leave-one-GPU-out relative error, by the index of its profile
// (RowInfo::profile_index of the fit's datasets).
using ErrorsByProfile = std::map<size_t, double>;

// A training architecture priced as a new one is: its
// nodes with nothing measured, the efficiencies learned without them.
struct HeldOutArchitecture {
  std::string architecture;
  std::vector<DescribedProfile> profiles;     // its nodes' profiles
  std::vector<size_t> profile_ids;            // their indices in the fit's
  std::map<std::string, models::Node> nodes;  // its nodes, nothing measured
  EfficiencyTable efficiencies;               // learned on the other nodes
  double spread[2] = {0, 0};                  // DistanceSpread, compute / memory bound
};

// One fold per architecture of the nodes in `node_list` (the fit's, with
// their profile rates, whose profiles are `profiles`); `model` holds the
// rate spreads. None with fewer than two architectures.
std::vector<HeldOutArchitecture> HeldOutArchitectures(
    absl::Span<const DescribedProfile> profiles,
    const std::map<std::string, models::Node>& given_nodes,
    absl::Span<const models::Node* const> node_list, const PredictorModel& model);

// Sets the distance_scale of each of model.level1 from `folds`: `nodes` are
// the fit's (with their profile rates), `transfer` each class's
// leave-one-GPU-out errors.
void CalibrateLevel1Scales(absl::Span<const HeldOutArchitecture> folds,
                           const std::map<std::string, models::Node>& nodes,
                           const std::map<models::OpClass, ErrorsByProfile>& transfer,
                           PredictorModel& model);

// Sets the distance_scale of `phase`'s level-2 models (the global one, by
// `global_transfer`, and each family's on its rows, by `family_transfer`
// keyed as model.level2_by_family) from `folds`; `level1` prices a workload's
// operations as the fit's level-2 datasets did. Those no fold had a row for
// (all their rows on one architecture, or a one-ratio model without
// leave-one-GPU-out errors) keep 1 and are appended to `unlearned`.
void CalibrateLevel2Scales(absl::Span<const HeldOutArchitecture> folds,
                           const std::map<std::string, models::Node>& nodes, models::Phase phase,
                           const Level1Fn& level1, const ErrorsByProfile& global_transfer,
                           const std::map<std::string, ErrorsByProfile>& family_transfer,
                           PredictorModel& model, std::vector<FittedModel*>& unlearned);

// Gives each of `unlearned` (models of `model`'s level 2) the median scale
// of the level-2 models that learned theirs: how much of a rate error
// reaches a whole step is a property of the level (its terms absorb part of
// it), which the spread as measured (1) overstates. Unchanged where no
// level-2 model learned one.
void ShareLevel2Scale(const PredictorModel& model, absl::Span<FittedModel* const> unlearned);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_DISTANCE_SCALE_H_

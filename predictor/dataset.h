// Dataset assembly: profiles joined with their node's effective rates and
// their workload's analytic descriptor, as rows of candidate features and a
// target in milliseconds.
//
// Level-1 rows come from operation profiles (WorkloadKind::kOperation, whose
// descriptor holds the one operation), target = time per call. Level-2 rows
// come from model profiles, target = time per iteration.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_DATASET_H_
#define PERFCAST_PREDICTOR_DATASET_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "predictor/features.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

// A profile with its workload's descriptor (models::Describe of its spec, or
// one computed on import).
struct DescribedProfile {
  models::Profile profile;
  models::WorkloadDescriptor descriptor;
};

// What a row is about, for grouped folds and per-group error reports.
struct RowInfo {
  std::string node;
  std::string gpu;           // GPU model
  std::string architecture;  // GPU generation
  std::string family;        // workload family
  std::string precision;
  int64_t inner_modules = 0;
  size_t profile_index = 0;  // into the span the dataset was built from
  LoadWidth load_regime = LoadWidth::kWide;  // level 1: LoadRegime of the operation
};

struct Dataset {
  std::vector<std::string> feature_names;
  Eigen::MatrixXd x;   // rows × features
  Eigen::VectorXd y;   // target, ms
  std::vector<RowInfo> info;
};

// Operation datasets, one per class, over the candidates of the level-1
// table. Profiles of kind kModel are skipped. InvalidArgument when a profile
// names a node absent from `nodes`, its descriptor has no operation, its
// mean time is not positive, or a feature is not finite.
absl::StatusOr<std::map<models::OpClass, Dataset>> BuildOperationDatasets(
    absl::Span<const DescribedProfile> profiles,
    const std::map<std::string, models::Node>& nodes, const EfficiencyTable& efficiencies);

// Per-iteration level-1 estimate of a workload on a node, in ms; supplied by
// the predictor once level 1 is fitted.
using Level1Fn = std::function<absl::StatusOr<double>(const models::WorkloadDescriptor&,
                                                      const EffectiveRates&)>;

// The level-2 dataset of model profiles in `phase`: the workload table's
// candidates, with level1_ms first and level1_gpu_ms (`level1` on
// LaunchFree rates) when `level1` is set. Same errors as
// BuildOperationDatasets; FailedPrecondition when no profile qualifies.
absl::StatusOr<Dataset> BuildWorkloadDataset(absl::Span<const DescribedProfile> profiles,
                                             const std::map<std::string, models::Node>& nodes,
                                             const EfficiencyTable& efficiencies,
                                             models::Phase phase, const Level1Fn& level1);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_DATASET_H_

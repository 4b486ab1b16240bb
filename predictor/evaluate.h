// Out-of-sample evaluation of the two-level predictor on the splits users
// care about: random k-fold, leave-one-GPU-out, and held-out larger sizes
// (extrapolation in layers / inner modules), globally or per family.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_EVALUATE_H_
#define PERFCAST_PREDICTOR_EVALUATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "predictor/dataset.h"
#include "predictor/predictor.h"

namespace perfcast::predictor {

enum class Split {
  kRandomKFold,     // profiles dealt into `folds` seeded folds
  kLeaveOneGpuOut,  // one split per GPU model
  kHeldOutSizes,    // train on inner_modules <= size_threshold, test above
  // Per model family, hold out its largest size (most parameters) and train
  // on the rest; a family measured at one size only is not held out.
  kLargestSizePerFamily,
};

struct EvaluateOptions {
  Split split = Split::kLeaveOneGpuOut;
  int folds = 5;               // kRandomKFold
  uint64_t seed = 1;           // kRandomKFold
  int64_t size_threshold = 0;  // kHeldOutSizes
  FitOptions fit;              // how each training split is fitted
};

// One held-out profile: what was predicted and what was measured.
struct EvaluatedPoint {
  int level = 1;  // 1: operation call time, 2: iteration time
  size_t profile_index = 0;
  std::string gpu;
  std::string family;
  std::string precision;
  double predicted_ms = 0;
  // The prediction's 10th..90th percentile band (level 2; 0 at level 1).
  double predicted_low_ms = 0;
  double predicted_high_ms = 0;
  double measured_ms = 0;
};

struct ErrorSummary {
  int64_t count = 0;
  double mape = 0;
};

struct LevelReport {
  ErrorSummary overall;
  std::map<std::string, ErrorSummary> by_gpu;
  std::map<std::string, ErrorSummary> by_family;
  std::map<std::string, ErrorSummary> by_precision;
};

struct EvaluationReport {
  LevelReport level1;  // operation profiles (not evaluated by the size splits)
  LevelReport level2;  // model profiles
  std::vector<EvaluatedPoint> points;  // the (predicted, measured) pairs
  std::vector<std::string> notes;      // splits or profiles that were skipped
};

// Fits on each training split with options.fit and predicts its held-out
// profiles. Errors: InvalidArgument for bad options or profiles (as
// FitDescribed); FailedPrecondition when no held-out profile could be
// predicted at all.
absl::StatusOr<EvaluationReport> EvaluateDescribed(absl::Span<const DescribedProfile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   const EvaluateOptions& options);

// The same, describing workloads with models::Describe first.
absl::StatusOr<EvaluationReport> Evaluate(absl::Span<const models::Profile> profiles,
                                          const std::map<std::string, models::Node>& nodes,
                                          const EvaluateOptions& options);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_EVALUATE_H_

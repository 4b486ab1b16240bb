// Out-of-sample evaluation of the two-level predictor on the splits users
// care about: random k-fold, leave-one-GPU-out, held-out larger sizes
// (extrapolation in layers / inner modules, globally or per family), and an
// explicit train-GPU / test-GPU protocol that proves transfer to GPUs the fit
// never saw.
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
  kTrainTestGpus,   // fit on train_gpus' profiles only, predict test_gpus'
};

struct EvaluateOptions {
  Split split = Split::kLeaveOneGpuOut;
  int folds = 5;               // kRandomKFold
  uint64_t seed = 1;           // kRandomKFold
  int64_t size_threshold = 0;  // kHeldOutSizes
  std::vector<std::string> train_gpus;  // kTrainTestGpus: GPU models
  std::vector<std::string> test_gpus;
  FitOptions fit;              // how each training split is fitted
};

// One held-out profile: what was predicted and what was measured.
struct EvaluatedPoint {
  int level = 1;  // 1: operation call time, 2: iteration time
  size_t profile_index = 0;
  std::string gpu;
  std::string family;
  std::string precision;
  std::string phase;
  std::string op_class;  // level 1: the operation's class
  std::string method;    // Prediction::method
  double predicted_ms = 0;
  double lo_ms = 0;      // the prediction's 10th..90th percentile band
  double hi_ms = 0;
  double measured_ms = 0;
};

struct ErrorSummary {
  int64_t count = 0;
  double mape = 0;      // mean |predicted − measured| / measured
  double bias = 0;      // mean (predicted − measured) / measured: > 0 over-predicts
  // The median of the same signed errors: the typical offset, which a few
  // wild rows cannot drag the way they drag the mean.
  double median_bias = 0;
  double coverage = 0;  // fraction of measurements inside [lo, hi]; 0.8 is honest
};

struct LevelReport {
  ErrorSummary overall;
  std::map<std::string, ErrorSummary> by_gpu;
  std::map<std::string, ErrorSummary> by_family;
  std::map<std::string, ErrorSummary> by_precision;
  std::map<std::string, ErrorSummary> by_phase;
  std::map<std::string, ErrorSummary> by_class;  // level 1: operation class
};

struct EvaluationReport {
  LevelReport level1;  // operation profiles (not evaluated by the size splits)
  LevelReport level2;  // model profiles
  std::vector<EvaluatedPoint> points;  // the (predicted, measured) pairs
  std::vector<std::string> notes;      // splits or profiles that were skipped
  // kTrainTestGpus: the one model, fitted on the training GPUs alone.
  PredictorModel fitted;
};

// The transfer protocol as a pure function of its two row sets: fits on
// `train` alone and predicts every profile of `test` on its node stripped of
// measured rates (an unseen GPU is known from its spec sheet), so nothing of
// the test rows (times, rates, efficiencies) reaches the fit. Errors:
// InvalidArgument when a GPU model has rows in both sets or a profile names
// an unknown node; FailedPrecondition when the fit fails or no test profile
// could be predicted.
absl::StatusOr<EvaluationReport> EvaluateTransfer(absl::Span<const DescribedProfile> train,
                                                  absl::Span<const DescribedProfile> test,
                                                  const std::map<std::string, models::Node>& nodes,
                                                  const FitOptions& options);

// Fits on each training split with options.fit and predicts its held-out
// profiles, each as the loop that measured it ran (models::MeasuredLoop: an
// agent's row is its C++ loop, an imported run a Python loop's). kTrainTestGpus splits `profiles` by the GPU models of their nodes
// and runs EvaluateTransfer. Errors: InvalidArgument for bad options or
// profiles (as FitDescribed), and for kTrainTestGpus an empty list, a GPU in
// both lists, a GPU no node has, or one without selected profiles (each
// named); FailedPrecondition when no held-out profile could be predicted at
// all.
absl::StatusOr<EvaluationReport> EvaluateDescribed(absl::Span<const DescribedProfile> profiles,
                                                   const std::map<std::string, models::Node>& nodes,
                                                   const EvaluateOptions& options);

// The same, describing workloads with models::Describe first.
absl::StatusOr<EvaluationReport> Evaluate(absl::Span<const models::Profile> profiles,
                                          const std::map<std::string, models::Node>& nodes,
                                          const EvaluateOptions& options);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_EVALUATE_H_

// Job-time arithmetic (DESIGN.md, "Prediction"): job time = iterations ×
// per-iteration time + epochs × per-epoch overhead, with the prediction's
// band carried through.
//
// Example:
//   JobSize job{.samples = 1'000'000, .epochs = 30};
//   absl::StatusOr<JobEstimate> estimate = EstimateJob(prediction, job, 256);
//
// Thread-safe: pure functions over plain values.
#ifndef PERFCAST_PREDICTOR_JOB_H_
#define PERFCAST_PREDICTOR_JOB_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "predictor/predictor.h"

namespace perfcast::predictor {

// How much work a job is: samples and epochs (iterations = ceil(samples /
// batch) × epochs), or an iteration count directly.
struct JobSize {
  int64_t samples = 0;
  int64_t epochs = 0;
  int64_t iterations = 0;  // non-zero: samples and epochs must be zero
  double per_epoch_overhead_s = 0;
};

// The most iterations a job may have: beyond 2^53 a double no longer holds
// the count exactly, and the answer (centuries of compute) is surely a typo.
inline constexpr int64_t kMaxIterations = int64_t{1} << 53;

// InvalidArgument naming the field: both forms given, or a count < 1, or a
// negative or non-finite overhead. Does not know the batch size, so the
// iteration limit is checked by EstimateJob.
absl::Status ValidateJobSize(const JobSize& job);

struct JobEstimate {
  int64_t iterations = 0;
  double seconds = 0;
  double lo_seconds = 0;
  double hi_seconds = 0;
};

// The job's time under `prediction` with `batch_size` samples per iteration.
// Errors: as ValidateJobSize, InvalidArgument for batch_size < 1;
// OutOfRange when the job has more than kMaxIterations iterations (the
// samples/epochs product included); FailedPrecondition when the time is not
// finite.
absl::StatusOr<JobEstimate> EstimateJob(const Prediction& prediction, const JobSize& job,
                                        int64_t batch_size);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_JOB_H_

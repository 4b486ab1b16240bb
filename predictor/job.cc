#include "predictor/job.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::predictor {

absl::Status ValidateJobSize(const JobSize& job) {
  if (!(job.per_epoch_overhead_s >= 0) || !std::isfinite(job.per_epoch_overhead_s)) {
    return absl::InvalidArgumentError("job: the per-epoch overhead must be finite and >= 0");
  }
  if (job.iterations != 0) {
    if (job.samples != 0 || job.epochs != 0) {
      return absl::InvalidArgumentError("job: give samples and epochs, or iterations, not both");
    }
    if (job.iterations < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("job.iterations must be >= 1, got ", job.iterations));
    }
    return absl::OkStatus();
  }
  if (job.samples <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("job.samples must be >= 1, got ", job.samples));
  }
  if (job.epochs <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("job.epochs must be >= 1, got ", job.epochs));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobEstimate> EstimateJob(const Prediction& prediction, const JobSize& job,
                                        int64_t batch_size) {
  RETURN_IF_ERROR(ValidateJobSize(job));
  JobEstimate estimate;
  int64_t epochs = 0;
  if (job.iterations != 0) {
    estimate.iterations = job.iterations;
  } else {
    if (batch_size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("job: the batch size must be >= 1, got ", batch_size));
    }
    // samples/batch rounded up, without the overflow of samples + batch - 1.
    const int64_t per_epoch =
        job.samples / batch_size + (job.samples % batch_size != 0 ? 1 : 0);
    if (__builtin_mul_overflow(per_epoch, job.epochs, &estimate.iterations)) {
      return absl::OutOfRangeError(absl::StrCat(
          "job: ", per_epoch, " iterations per epoch times ", job.epochs,
          " epochs overflows the iteration count (the largest job has ", kMaxIterations,
          " iterations)"));
    }
    epochs = job.epochs;
  }
  if (estimate.iterations > kMaxIterations) {
    return absl::OutOfRangeError(absl::StrCat("job: ", estimate.iterations,
                                              " iterations exceed the largest job (",
                                              kMaxIterations, " iterations)"));
  }
  const double n = static_cast<double>(estimate.iterations) / 1e3;
  const double overhead = static_cast<double>(epochs) * job.per_epoch_overhead_s;
  estimate.seconds = n * prediction.iteration_ms + overhead;
  estimate.lo_seconds = n * prediction.lo_ms + overhead;
  estimate.hi_seconds = n * prediction.hi_ms + overhead;
  if (!std::isfinite(estimate.seconds) || !std::isfinite(estimate.lo_seconds) ||
      !std::isfinite(estimate.hi_seconds)) {
    return absl::FailedPreconditionError("the model predicts a non-finite job time");
  }
  return estimate;
}

}  // namespace perfcast::predictor

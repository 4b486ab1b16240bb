// The timing harness for whole proxy models (models/torch): warm-up
// iterations, then timed repeats of training steps (data load, host->device
// copy, forward + loss, backward, optimizer step) or inference batches
// (forward only). Device phases are timed with CUDA events (one
// synchronisation per iteration, at its end); the data load and the whole
// iteration with the host's steady clock.
//
// Internal to perfcast_profiler (includes LibTorch).
#ifndef PERFCAST_PROFILER_PROXY_HARNESS_H_
#define PERFCAST_PROFILER_PROXY_HARNESS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "profiler/device.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// Measures a normalised model workload. Iteration counts adapt so that each
// repeat holds about `timing.target_repeat_ms` of work. Fills iteration
// statistics (over every timed iteration), repeat_cv (over the repeats'
// means), the phase breakdown, throughput (samples/s), epoch_s, peak device
// memory, achieved_tflops and roofline_fraction (against `rates`). Errors as
// Measurer::Measure.
absl::StatusOr<models::Profile> MeasureModel(const Device& device,
                                             const models::WorkloadSpec& spec,
                                             const TimingPolicy& timing,
                                             const models::MeasuredRates& rates, uint64_t seed);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PROXY_HARNESS_H_

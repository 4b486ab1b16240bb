// The timing harness for whole proxy models (models/torch), method version
// 2: the steady state of a training (or inference) loop. Batches come from a
// prefetch ring filled before timing; each step copies its batch to the
// device without blocking and is enqueued without a host synchronisation;
// device marks (CUDA events; the steady clock on a CPU) bracket blocks of
// steps. Warm-up blocks run until two consecutive ones agree within
// timing.warmup_tolerance; then the pass's timed blocks, each of at least
// timing.target_repeat_ms and timing.min_iterations steps, more (adaptive,
// TimingPolicy) while their median is not yet pinned down, and each after a
// short probe of the host's dispatch rate. The first pass
// also runs a few instrumented steps fed by the generator, which split a
// step into its phases (data generation, copy, forward, backward,
// optimizer); the generator's cost is never part of the timed steps.
//
// Internal to perfcast_profiler (includes LibTorch).
#ifndef PERFCAST_PROFILER_PROXY_HARNESS_H_
#define PERFCAST_PROFILER_PROXY_HARNESS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "models/hardware.h"
#include "models/workload.h"
#include "profiler/device.h"
#include "profiler/measurer.h"
#include "profiler/nvml.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// Measures pass `pass` of a normalised model workload. Fills the profile's
// iteration statistics over the pass's blocks (median of the block means,
// count = steps timed), repeats and repeat_cv over the blocks, the phases
// (pass 0), throughput (samples/s) and epoch_s at the median, peak device
// memory, achieved_tflops and roofline_fraction (against `rates`), and the
// GPU state from `sensor` (nullptr: none). Errors as Measurer::Measure.
absl::StatusOr<Measurement> MeasureModel(const Device& device, const models::WorkloadSpec& spec,
                                         const TimingPolicy& timing, int pass,
                                         const models::MeasuredRates& rates, uint64_t seed,
                                         const GpuSensor* sensor);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_PROXY_HARNESS_H_

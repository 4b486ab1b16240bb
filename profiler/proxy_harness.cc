#include "profiler/proxy_harness.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/torch/proxy.h"
#include "profiler/fingerprint.h"
#include "profiler/op_bench.h"
#include "profiler/proxy_session.h"
#include "profiler/stats.h"

namespace perfcast::profiler {
namespace {

// Instrumented steps on the first pass: enough for a stable split of a
// small step, few for a large one.
constexpr double kInstrumentedTargetMs = 30;
constexpr int kMaxInstrumentedSteps = 5;

// Steps for a block of about `target_ms` at `step_ms` a step.
int StepsFor(double target_ms, double step_ms, const TimingPolicy& timing) {
  return static_cast<int>(std::clamp(std::ceil(target_ms / std::max(step_ms, 1e-3)),
                                     static_cast<double>(timing.min_iterations),
                                     static_cast<double>(timing.max_iterations)));
}

}  // namespace

absl::StatusOr<Measurement> MeasureModel(const Device& device, const models::WorkloadSpec& spec,
                                         const TimingPolicy& timing, int pass,
                                         const models::MeasuredRates& rates, uint64_t seed,
                                         const GpuSensor* sensor) {
  if (spec.kind != models::WorkloadKind::kModel) {
    return absl::InvalidArgumentError(absl::StrCat(spec.Key(), " is not a model workload"));
  }
  RETURN_IF_ERROR(device.Supports(spec.precision));

  Measurement m;
  models::Profile& profile = m.profile;
  profile.workload = spec;
  absl::Status status = RunGuarded(device, [&]() -> absl::Status {
    device.ResetPeakMemory();
    ASSIGN_OR_RETURN(std::unique_ptr<ProxySession> session,
                     ProxySession::Create(device, spec, seed));
    ProxySession& s = *session;
    s.Prefetch(timing.prefetch_batches);

    // Single steps first (lazy initialisation, allocator growth), the last
    // the first estimate of the step time; then warm-up blocks of half the
    // timed length until two consecutive ones agree.
    double step_ms = 0;
    for (int i = 0; i < std::max(1, timing.warmup_iterations); ++i) step_ms = s.TimedBlockMs(1);
    const int warmup_steps = StepsFor(timing.target_repeat_ms / 2, step_ms, timing);
    double previous = s.TimedBlockMs(warmup_steps);
    step_ms = previous;
    for (int b = 1; b < timing.max_warmup_blocks; ++b) {
      step_ms = s.TimedBlockMs(warmup_steps);
      const bool converged = std::abs(step_ms - previous) <= timing.warmup_tolerance * previous;
      previous = step_ms;
      if (converged) break;
    }

    const int steps = StepsFor(timing.target_repeat_ms, step_ms, timing);
    const int planned = RepeatsInPass(timing.repeats, timing.passes, pass);
    const int cap = std::max(planned, RepeatsInPass(timing.max_repeats, timing.passes, pass));
    BlockMonitor monitor(sensor);
    for (int r = 0; r < cap; ++r) {
      if (r >= planned && MedianRelativeStandardError(m.block_ms) <= timing.target_median_error) {
        break;
      }
      m.dispatch_ops_per_s.push_back(DispatchOpsPerS(device, kHostProbeOps, /*rounds=*/1));
      monitor.BeginBlock();
      m.block_ms.push_back(s.TimedBlockMs(steps));
      monitor.EndBlock();
    }
    const int blocks = static_cast<int>(m.block_ms.size());
    m.steps = static_cast<int64_t>(steps) * blocks;
    m.gpu = monitor.State();

    if (pass == 0) {
      const int instrumented = static_cast<int>(std::clamp(
          std::ceil(kInstrumentedTargetMs / std::max(step_ms, 1e-3)), 1.0,
          static_cast<double>(kMaxInstrumentedSteps)));
      StepTimes sum;
      for (int i = 0; i < instrumented; ++i) {
        const StepTimes t = s.InstrumentedStep();
        sum.data_load_ms += t.data_load_ms;
        sum.h2d_ms += t.h2d_ms;
        sum.forward_ms += t.forward_ms;
        sum.backward_ms += t.backward_ms;
        sum.optimizer_ms += t.optimizer_ms;
      }
      const double n = instrumented;
      profile.phases.data_load_ms = sum.data_load_ms / n;
      profile.phases.h2d_ms = sum.h2d_ms / n;
      profile.phases.forward_ms = sum.forward_ms / n;
      if (spec.phase == models::Phase::kTrain) {
        profile.phases.backward_ms = sum.backward_ms / n;
        profile.phases.optimizer_ms = sum.optimizer_ms / n;
      }
    }

    profile.iteration = Summarize(m.block_ms);
    profile.iteration.count = m.steps;
    profile.repeats = blocks;
    profile.repeat_cv = CoefficientOfVariation(m.block_ms);
    profile.peak_memory_bytes = device.PeakMemoryBytes();
    const double step_s = profile.iteration.median_ms * 1e-3;
    profile.throughput_per_s = static_cast<double>(spec.batch_size) / step_s;
    profile.epoch_s = static_cast<double>(s.samples_per_epoch()) / *profile.throughput_per_s;
    const double flops = s.descriptor().total_flops();
    if (flops > 0) {
      profile.achieved_tflops = flops / step_s / 1e12;
      if (std::optional<double> peak = PeakTflops(rates, spec.precision); peak && *peak > 0) {
        profile.roofline_fraction = *profile.achieved_tflops / *peak;
      }
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return m;
}

}  // namespace perfcast::profiler

#include "profiler/proxy_harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/torch/proxy.h"
#include "profiler/op_bench.h"
#include "profiler/proxy_session.h"
#include "profiler/stats.h"

namespace perfcast::profiler {

absl::StatusOr<models::Profile> MeasureModel(const Device& device,
                                             const models::WorkloadSpec& spec,
                                             const TimingPolicy& timing,
                                             const models::MeasuredRates& rates, uint64_t seed) {
  if (spec.kind != models::WorkloadKind::kModel) {
    return absl::InvalidArgumentError(absl::StrCat(spec.Key(), " is not a model workload"));
  }
  if (absl::Status s = device.Supports(spec.precision); !s.ok()) return s;

  models::Profile profile;
  profile.workload = spec;
  absl::Status status = RunGuarded(device, [&]() -> absl::Status {
    device.ResetPeakMemory();
    absl::StatusOr<std::unique_ptr<ProxySession>> session = ProxySession::Create(device, spec, seed);
    if (!session.ok()) return session.status();
    ProxySession& s = **session;

    double warmup_ms = 0;
    for (int i = 0; i < std::max(1, timing.warmup_iterations); ++i) {
      warmup_ms = s.Step().total_ms;  // the last warm-up is the best estimate
    }
    const int iterations = static_cast<int>(
        std::clamp(std::ceil(timing.target_repeat_ms / std::max(warmup_ms, 1e-3)),
                   static_cast<double>(timing.min_iterations),
                   static_cast<double>(timing.max_iterations)));

    std::vector<double> all_ms, repeat_means;
    StepTimes phase_sums;
    for (int r = 0; r < timing.repeats; ++r) {
      double repeat_sum = 0;
      for (int i = 0; i < iterations; ++i) {
        const StepTimes t = s.Step();
        all_ms.push_back(t.total_ms);
        repeat_sum += t.total_ms;
        phase_sums.data_load_ms += t.data_load_ms;
        phase_sums.h2d_ms += t.h2d_ms;
        phase_sums.forward_ms += t.forward_ms;
        phase_sums.backward_ms += t.backward_ms;
        phase_sums.optimizer_ms += t.optimizer_ms;
      }
      repeat_means.push_back(repeat_sum / iterations);
    }
    const double n = static_cast<double>(all_ms.size());
    profile.iteration = Summarize(all_ms);
    profile.repeats = timing.repeats;
    profile.repeat_cv = CoefficientOfVariation(repeat_means);
    profile.phases.data_load_ms = phase_sums.data_load_ms / n;
    profile.phases.h2d_ms = phase_sums.h2d_ms / n;
    profile.phases.forward_ms = phase_sums.forward_ms / n;
    if (spec.phase == models::Phase::kTrain) {
      profile.phases.backward_ms = phase_sums.backward_ms / n;
      profile.phases.optimizer_ms = phase_sums.optimizer_ms / n;
    }
    profile.peak_memory_bytes = device.PeakMemoryBytes();
    const double mean_s = profile.iteration.mean_ms * 1e-3;
    profile.throughput_per_s = static_cast<double>(spec.batch_size) / mean_s;
    profile.epoch_s = static_cast<double>(s.samples_per_epoch()) / *profile.throughput_per_s;
    const double flops = s.descriptor().total_flops();
    if (flops > 0) {
      profile.achieved_tflops = flops / mean_s / 1e12;
      if (std::optional<double> peak = PeakTflops(rates, spec.precision); peak && *peak > 0) {
        profile.roofline_fraction = *profile.achieved_tflops / *peak;
      }
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return profile;
}

}  // namespace perfcast::profiler

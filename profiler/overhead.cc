#include "profiler/overhead.h"

#ifdef PERFCAST_AGENT_PROXIES
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "models/descriptor.h"
#include "profiler/device.h"
#include "profiler/proxy_session.h"
#include "profiler/stats.h"
#endif

namespace perfcast::profiler {

#ifdef PERFCAST_AGENT_PROXIES
namespace {

// The bare loop: what a user's script would time.
double BareBlockMs(const Device& device, ProxySession& session, int steps) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) session.SteadyStep();
  device.Synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         steps;
}

}  // namespace

absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device_options,
                                               const OverheadOptions& options) {
  if (options.pairs < 1) return absl::InvalidArgumentError("pairs must be >= 1");
  if (options.families.empty()) return absl::InvalidArgumentError("no families given");
  if (!(options.block_ms > 0)) return absl::InvalidArgumentError("block_ms must be positive");
  std::vector<models::WorkloadSpec> specs;
  for (const std::string& family : options.families) {
    models::WorkloadSpec spec;
    spec.family = family;
    spec.batch_size = options.batch;
    ASSIGN_OR_RETURN(models::WorkloadSpec normal, models::NormalizeSpec(spec));
    if (normal.kind != models::WorkloadKind::kModel) {
      return absl::InvalidArgumentError(absl::StrCat(family, " is not a model family"));
    }
    specs.push_back(normal);
  }
  ASSIGN_OR_RETURN(Device device, Device::Open(device_options));

  OverheadReport report;
  const int per_family =
      std::max(1, static_cast<int>(std::ceil(static_cast<double>(options.pairs) / specs.size())));
  for (const models::WorkloadSpec& spec : specs) {
    RETURN_IF_ERROR(RunGuarded(device, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(std::unique_ptr<ProxySession> session,
                       ProxySession::Create(device, spec, device_options.seed));
      ProxySession& s = *session;
      s.Prefetch(8);
      double step_ms = 0;
      for (int i = 0; i < 3; ++i) step_ms = s.TimedBlockMs(1);
      const int steps = static_cast<int>(
          std::clamp(std::ceil(options.block_ms / std::max(step_ms, 1e-3)), 3.0, 20000.0));
      for (int i = 0; i < 3; ++i) s.TimedBlockMs(steps);  // warm-up
      for (int p = 0; p < per_family; ++p) {
        OverheadPair pair{.workload_key = spec.Key()};
        if (p % 2 == 0) {
          pair.agent_ms = s.TimedBlockMs(steps);
          pair.bare_ms = BareBlockMs(device, s, steps);
        } else {
          pair.bare_ms = BareBlockMs(device, s, steps);
          pair.agent_ms = s.TimedBlockMs(steps);
        }
        report.pairs.push_back(pair);
      }
      return absl::OkStatus();
    }));
  }
  std::vector<double> ratios;
  for (const OverheadPair& pair : report.pairs) {
    if (pair.bare_ms > 0) ratios.push_back(pair.agent_ms / pair.bare_ms);
  }
  report.median_ratio = Quantile(ratios, 0.5);
  report.p10_ratio = Quantile(ratios, 0.1);
  report.p90_ratio = Quantile(ratios, 0.9);
  return report;
}
#else
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device,
                                               const OverheadOptions& options) {
  return absl::UnimplementedError("this build has no proxy models (models/torch)");
}
#endif

}  // namespace perfcast::profiler

#include "profiler/overhead.h"

#ifdef PERFCAST_AGENT_PROXIES
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/descriptor.h"
#include "profiler/device.h"
#include "profiler/proxy_session.h"
#include "profiler/stats.h"
#endif

namespace perfcast::profiler {

#ifdef PERFCAST_AGENT_PROXIES
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device_options,
                                               const OverheadOptions& options) {
  if (options.iterations < 1) return absl::InvalidArgumentError("iterations must be >= 1");
  absl::StatusOr<models::WorkloadSpec> spec = models::NormalizeSpec(options.spec);
  if (!spec.ok()) return spec.status();
  if (spec->kind != models::WorkloadKind::kModel) {
    return absl::InvalidArgumentError(absl::StrCat(spec->family, " is not a model family"));
  }
  absl::StatusOr<Device> device = Device::Open(device_options);
  if (!device.ok()) return device.status();

  OverheadReport report;
  report.workload_key = spec->Key();
  absl::Status status = RunGuarded(*device, [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<ProxySession>> session =
        ProxySession::Create(*device, *spec, device_options.seed);
    if (!session.ok()) return session.status();
    for (int i = 0; i < 5; ++i) (*session)->BareStep();
    // Alternating blocks cancel slow drift (clocks, thermals) between the two.
    constexpr int kBlocks = 4;
    const int per_block = std::max(1, options.iterations / kBlocks);
    std::vector<double> agent_ms, bare_ms;
    for (int b = 0; b < kBlocks; ++b) {
      for (int i = 0; i < per_block; ++i) agent_ms.push_back((*session)->Step().total_ms);
      for (int i = 0; i < per_block; ++i) {
        const auto start = std::chrono::steady_clock::now();
        (*session)->BareStep();
        bare_ms.push_back(std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count());
      }
    }
    report.agent_ms = Summarize(agent_ms).median_ms;
    report.bare_ms = Summarize(bare_ms).median_ms;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  report.ratio = report.bare_ms > 0 ? report.agent_ms / report.bare_ms : 0;
  return report;
}
#else
absl::StatusOr<OverheadReport> MeasureOverhead(const DeviceOptions& device,
                                               const OverheadOptions& options) {
  return absl::UnimplementedError("this build has no proxy models (models/torch)");
}
#endif

}  // namespace perfcast::profiler
